//! Periodic schedules (docs/schedules.md): a cron expression or a fixed
//! interval, and the job each tick enqueues. The server checks the
//! definition (the cron syntax, the zone, an interval of at least 1 s, the
//! template's queue) and refuses a bad one with
//! [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming the
//! field.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use crate::pb;
use crate::types::{duration, system_time, Priority};

/// When a schedule ticks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScheduleSpec {
    /// A cron expression: five fields (minute hour day-of-month month
    /// day-of-week), six with leading seconds, or a descriptor such as
    /// `@hourly`; read in the schedule's time zone.
    Cron(String),
    /// A fixed interval (at least 1 s): ticks at its multiples since the
    /// unix epoch, whatever the time zone.
    Interval(Duration),
}

/// What a tick does while the schedule's previous job is still waiting,
/// scheduled or reserved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ScheduleOverlap {
    /// No job for that tick (it counts as skipped).
    #[default]
    Skip,
    /// A job for every tick.
    Allow,
}

/// What the ticks missed while no leader could fire them make once one is
/// back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ScheduleCatchUp {
    /// One job for all the missed ticks.
    #[default]
    Once,
    /// None of them.
    Skip,
}

/// The job each tick enqueues. Every fired job also carries the custom
/// fields `sepp_schedule` (the schedule's name) and `sepp_schedule_tick`
/// (the tick in unix nanoseconds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobTemplate {
    pub queue: String,
    pub job_type: String,
    pub payload: Vec<u8>,
    /// `None` takes the queue's default priority.
    pub priority: Option<Priority>,
    pub custom: BTreeMap<String, String>,
    /// 0 takes the queue's default_max_attempts.
    pub max_attempts: u32,
}

impl JobTemplate {
    /// A job of job_type on queue (the server requires both).
    pub fn new(queue: impl Into<String>, job_type: impl Into<String>) -> JobTemplate {
        JobTemplate {
            queue: queue.into(),
            job_type: job_type.into(),
            payload: Vec::new(),
            priority: None,
            custom: BTreeMap::new(),
            max_attempts: 0,
        }
    }

    pub fn with_payload(mut self, payload: impl Into<Vec<u8>>) -> Self {
        self.payload = payload.into();
        self
    }

    pub fn with_priority(mut self, priority: Priority) -> Self {
        self.priority = Some(priority);
        self
    }

    pub fn with_max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts;
        self
    }

    pub fn with_custom(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.custom.insert(key.into(), value.into());
        self
    }

    fn to_wire(&self) -> pb::JobTemplate {
        pb::JobTemplate {
            queue: self.queue.clone(),
            job_type: self.job_type.clone(),
            payload: self.payload.clone(),
            priority: self.priority.map(Priority::level),
            custom: self.custom.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            max_attempts: self.max_attempts,
        }
    }

    fn from_wire(t: pb::JobTemplate) -> JobTemplate {
        JobTemplate {
            queue: t.queue,
            job_type: t.job_type,
            payload: t.payload,
            priority: t.priority.and_then(|p| Priority::new(p).ok()),
            custom: t.custom.into_iter().collect(),
            max_attempts: t.max_attempts,
        }
    }
}

/// What defines a schedule: create it with
/// [`SeppClient::create_schedule`](crate::client::SeppClient::create_schedule),
/// replace it with `update_schedule`.
///
/// ```
/// use std::time::Duration;
/// use sepp_rs::{JobTemplate, ScheduleDefinition, ScheduleOverlap};
///
/// let nightly = ScheduleDefinition::cron("nightly-report", "0 3 * * *", JobTemplate::new("reports", "build"))
///     .with_time_zone("Europe/Berlin");
/// let heartbeat = ScheduleDefinition::every("heartbeat", Duration::from_secs(30), JobTemplate::new("health", "ping"))
///     .with_overlap(ScheduleOverlap::Allow);
/// # let _ = (nightly, heartbeat);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleDefinition {
    /// 1..200 bytes; the schedule's identity.
    pub name: String,
    pub spec: ScheduleSpec,
    /// An IANA zone name the cron expression is read in; empty is UTC.
    pub time_zone: String,
    pub template: JobTemplate,
    pub overlap: ScheduleOverlap,
    pub catch_up: ScheduleCatchUp,
    /// Create it paused. Read back: whether it is paused (an update keeps
    /// the schedule's paused state whatever this says).
    pub paused: bool,
}

impl ScheduleDefinition {
    /// A schedule ticking at a cron expression's times.
    pub fn cron(name: impl Into<String>, expression: impl Into<String>, template: JobTemplate) -> ScheduleDefinition {
        ScheduleDefinition::new(name.into(), ScheduleSpec::Cron(expression.into()), template)
    }

    /// A schedule ticking every interval (at least 1 s).
    pub fn every(name: impl Into<String>, interval: Duration, template: JobTemplate) -> ScheduleDefinition {
        ScheduleDefinition::new(name.into(), ScheduleSpec::Interval(interval), template)
    }

    fn new(name: String, spec: ScheduleSpec, template: JobTemplate) -> ScheduleDefinition {
        ScheduleDefinition {
            name,
            spec,
            time_zone: String::new(),
            template,
            overlap: ScheduleOverlap::default(),
            catch_up: ScheduleCatchUp::default(),
            paused: false,
        }
    }

    pub fn with_time_zone(mut self, zone: impl Into<String>) -> Self {
        self.time_zone = zone.into();
        self
    }

    pub fn with_overlap(mut self, overlap: ScheduleOverlap) -> Self {
        self.overlap = overlap;
        self
    }

    pub fn with_catch_up(mut self, catch_up: ScheduleCatchUp) -> Self {
        self.catch_up = catch_up;
        self
    }

    /// Creates the schedule paused (create only).
    pub fn with_paused(mut self, paused: bool) -> Self {
        self.paused = paused;
        self
    }

    pub(crate) fn to_wire(&self) -> pb::Schedule {
        let (cron, interval) = match &self.spec {
            ScheduleSpec::Cron(c) => (c.clone(), None),
            ScheduleSpec::Interval(d) => (String::new(), Some(duration(*d))),
        };
        pb::Schedule {
            name: self.name.clone(),
            cron,
            interval,
            time_zone: self.time_zone.clone(),
            template: Some(self.template.to_wire()),
            overlap: match self.overlap {
                ScheduleOverlap::Skip => pb::ScheduleOverlap::Skip,
                ScheduleOverlap::Allow => pb::ScheduleOverlap::Allow,
            } as i32,
            catch_up: match self.catch_up {
                ScheduleCatchUp::Once => pb::ScheduleCatchUp::Once,
                ScheduleCatchUp::Skip => pb::ScheduleCatchUp::Skip,
            } as i32,
            paused: self.paused,
            ..pb::Schedule::default()
        }
    }
}

/// A schedule as the server holds it: its definition and what it did and
/// will do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    pub definition: ScheduleDefinition,
    /// The next ticks, soonest first; empty while paused.
    pub next_fire_times: Vec<SystemTime>,
    /// The latest tick fired; `None` before the first.
    pub last_fire_time: Option<SystemTime>,
    /// The job the latest tick enqueued; `None` when it enqueued none
    /// (skipped for overlap, missed, or refused).
    pub last_job_id: Option<u64>,
    /// Ticks that enqueued a job.
    pub fired: u64,
    /// Ticks that did not.
    pub skipped: u64,
    pub created_at: Option<SystemTime>,
    pub updated_at: Option<SystemTime>,
}

impl Schedule {
    pub fn name(&self) -> &str {
        &self.definition.name
    }

    pub fn paused(&self) -> bool {
        self.definition.paused
    }

    pub(crate) fn from_wire(s: pb::Schedule) -> Schedule {
        let spec = match s.interval.clone() {
            Some(d) if s.cron.is_empty() => ScheduleSpec::Interval(Duration::new(d.seconds.max(0) as u64, d.nanos.clamp(0, 999_999_999) as u32)),
            _ => ScheduleSpec::Cron(s.cron.clone()),
        };
        let overlap = match pb::ScheduleOverlap::from_i32(s.overlap) {
            Some(pb::ScheduleOverlap::Allow) => ScheduleOverlap::Allow,
            _ => ScheduleOverlap::Skip,
        };
        let catch_up = match pb::ScheduleCatchUp::from_i32(s.catch_up) {
            Some(pb::ScheduleCatchUp::Skip) => ScheduleCatchUp::Skip,
            _ => ScheduleCatchUp::Once,
        };
        Schedule {
            definition: ScheduleDefinition {
                name: s.name,
                spec,
                time_zone: s.time_zone,
                template: JobTemplate::from_wire(s.template.unwrap_or_default()),
                overlap,
                catch_up,
                paused: s.paused,
            },
            next_fire_times: s.next_fire_times.into_iter().filter_map(system_time).collect(),
            last_fire_time: s.last_fire_time.and_then(system_time),
            last_job_id: Some(s.last_job_id).filter(|id| *id != 0),
            fired: s.fired,
            skipped: s.skipped,
            created_at: s.created_at.and_then(system_time),
            updated_at: s.updated_at.and_then(system_time),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_round_trip_through_the_wire() {
        let cases = vec![
            ScheduleDefinition::cron("c", "*/10 * * * * *", JobTemplate::new("q", "t"))
                .with_time_zone("Europe/Berlin")
                .with_overlap(ScheduleOverlap::Allow)
                .with_catch_up(ScheduleCatchUp::Skip)
                .with_paused(true),
            ScheduleDefinition::every(
                "i",
                Duration::from_millis(1500),
                JobTemplate::new("q", "t").with_payload(b"p".to_vec()).with_priority(Priority::P7).with_max_attempts(4).with_custom("k", "v"),
            ),
        ];
        for def in cases {
            let wire = def.to_wire();
            match &def.spec {
                ScheduleSpec::Cron(c) => assert!(wire.interval.is_none() && wire.cron == *c),
                ScheduleSpec::Interval(_) => assert!(wire.interval.is_some() && wire.cron.is_empty()),
            }
            let back = Schedule::from_wire(wire);
            assert_eq!(back.definition, def);
            assert_eq!(back.last_job_id, None);
            assert!(back.next_fire_times.is_empty());
        }
    }

    #[test]
    fn unset_enums_read_as_the_server_defaults() {
        let s = Schedule::from_wire(pb::Schedule {
            name: "n".into(),
            cron: "@hourly".into(),
            last_job_id: 7,
            ..pb::Schedule::default()
        });
        assert_eq!(s.definition.overlap, ScheduleOverlap::Skip);
        assert_eq!(s.definition.catch_up, ScheduleCatchUp::Once);
        assert_eq!(s.last_job_id, Some(7));
    }
}
