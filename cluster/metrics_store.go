package cluster

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sepp-io/sepp/store"
)

// storeCollector exports the payload store's figures (store.Stats) when
// scraped: whether compaction keeps up with the deletes of a consumed
// backlog, what reads step over, and the write stalls that hold applies.
// A node without a payload store exports none of them.
type storeCollector struct {
	n       *Node
	figures []storeFigure
}

// storeFigure is one exported figure of store.Stats.
type storeFigure struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(store.Stats) float64
}

func newStoreCollector(n *Node) *storeCollector {
	figure := func(name string, kind prometheus.ValueType, help string, value func(store.Stats) float64) storeFigure {
		return storeFigure{desc: prometheus.NewDesc(name, help, nil, nil), kind: kind, value: value}
	}
	const counter, gauge = prometheus.CounterValue, prometheus.GaugeValue
	return &storeCollector{n: n, figures: []storeFigure{
		figure("sepp_payload_store_compactions_total", counter, "Compactions the payload store completed since the node opened it (at its start, and at an install).",
			func(s store.Stats) float64 { return float64(s.Compactions) }),
		figure("sepp_payload_store_compaction_seconds_total", counter, "Time the payload store's completed compactions took together (they run in the background, beside applies).",
			func(s store.Stats) float64 { return s.CompactionSeconds }),
		figure("sepp_payload_store_compactions_in_progress", gauge, "Compactions of the payload store running now.",
			func(s store.Stats) float64 { return float64(s.CompactionsInProgress) }),
		figure("sepp_payload_store_compaction_debt_bytes", gauge, "Pebble's estimate of the bytes the payload store's compactions must still rewrite: it grows while a fill or a drain outruns them.",
			func(s store.Stats) float64 { return float64(s.CompactionDebtBytes) }),
		figure("sepp_payload_store_flushes_total", counter, "Memtables the payload store wrote to disk since the node opened it.",
			func(s store.Stats) float64 { return float64(s.Flushes) }),
		figure("sepp_payload_store_read_amplification", gauge, "Places a read of the payload store may look in: level 0's sublevels plus the other non-empty levels.",
			func(s store.Stats) float64 { return float64(s.ReadAmplification) }),
		figure("sepp_payload_store_l0_files", gauge, "Tables in the payload store's level 0; writes stall when it grows too far.",
			func(s store.Stats) float64 { return float64(s.L0Files) }),
		figure("sepp_payload_store_l0_sublevels", gauge, "Sublevels of the payload store's level 0.",
			func(s store.Stats) float64 { return float64(s.L0Sublevels) }),
		figure("sepp_payload_store_memtable_bytes", gauge, "Bytes the payload store's memtables hold, including those waiting to be flushed.",
			func(s store.Stats) float64 { return float64(s.MemTableBytes) }),
		figure("sepp_payload_store_tombstones", gauge, "Pebble's approximate count of deletion markers in the payload store's tables: acks and deletes not yet compacted away, which a consumer's reads step over.",
			func(s store.Stats) float64 { return float64(s.Tombstones) }),
		figure("sepp_payload_store_write_stalls_total", counter, "Write stalls of the payload store since the node opened it; each holds the apply of every entry behind it.",
			func(s store.Stats) float64 { return float64(s.WriteStalls) }),
	}}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range c.figures {
		ch <- f.desc
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	st, ok := c.n.fsm.PayloadStoreStats()
	if !ok {
		return
	}
	for _, f := range c.figures {
		ch <- prometheus.MustNewConstMetric(f.desc, f.kind, f.value(st))
	}
}
