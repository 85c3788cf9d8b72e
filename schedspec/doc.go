// Package schedspec evaluates periodic schedule specs on the leader: it
// parses cron expressions (five fields, or six with leading seconds, and
// the @hourly-style descriptors) and fixed intervals in an IANA time zone,
// and plans which tick a leader fires next. The engine never evaluates a
// spec (it has no clock and no zone database); it receives the ticks this
// package computes, carried in ScheduleFire commands.
//
// Cron parsing and next-time evaluation are github.com/netresearch/go-cron,
// the maintained fork of robfig/cron: robfig/cron v3.0.1 (2020, no release
// since) silently skips a job whose local time falls in the hour a
// spring-forward removes (robfig/cron#541, still open), which the fork
// fixes. The fork still matches both occurrences of a repeated hour; Next
// steps over the second.
//
// Daylight saving time, for a cron schedule in a zone that observes it:
//   - a local time that does not exist (the hour a spring-forward skips)
//     fires once, shifted forward by the gap: 02:30 on the day clocks jump
//     from 02:00 to 03:00 fires at 03:30;
//   - a local time that occurs twice (the hour a fall-back repeats) fires
//     once, at its first occurrence; this holds for every cron schedule,
//     so an hourly one fires 01:00 once on that day.
//
// Day-of-month and day-of-week restricted together match either (the
// classic cron OR rule). An interval schedule ignores the zone: it ticks at
// the multiples of its interval since the unix epoch, so every leader
// computes the same ticks.
package schedspec
