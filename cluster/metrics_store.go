package cluster

import (
	"github.com/prometheus/client_golang/prometheus"
)

// storeCollector exports the payload store's figures (store.Stats) when
// scraped: whether compaction keeps up with the deletes of a consumed
// backlog, what reads step over, and the write stalls that hold applies.
// A node without a payload store exports none of them.
type storeCollector struct {
	n                                                *Node
	compactions, compactionSeconds, inProgress, debt *prometheus.Desc
	flushes, readAmp, l0Files, l0Sublevels, memtable *prometheus.Desc
	tombstones, writeStalls                          *prometheus.Desc
}

func newStoreCollector(n *Node) *storeCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &storeCollector{
		n:                 n,
		compactions:       d("sepp_payload_store_compactions_total", "Compactions the payload store completed since the node opened it (at its start, and at an install)."),
		compactionSeconds: d("sepp_payload_store_compaction_seconds_total", "Time the payload store's completed compactions took together (they run in the background, beside applies)."),
		inProgress:        d("sepp_payload_store_compactions_in_progress", "Compactions of the payload store running now."),
		debt:              d("sepp_payload_store_compaction_debt_bytes", "Pebble's estimate of the bytes the payload store's compactions must still rewrite: it grows while a fill or a drain outruns them."),
		flushes:           d("sepp_payload_store_flushes_total", "Memtables the payload store wrote to disk since the node opened it."),
		readAmp:           d("sepp_payload_store_read_amplification", "Places a read of the payload store may look in: level 0's sublevels plus the other non-empty levels."),
		l0Files:           d("sepp_payload_store_l0_files", "Tables in the payload store's level 0; writes stall when it grows too far."),
		l0Sublevels:       d("sepp_payload_store_l0_sublevels", "Sublevels of the payload store's level 0."),
		memtable:          d("sepp_payload_store_memtable_bytes", "Bytes the payload store's memtables hold, including those waiting to be flushed."),
		tombstones:        d("sepp_payload_store_tombstones", "Pebble's approximate count of deletion markers in the payload store's tables: acks and deletes not yet compacted away, which a consumer's reads step over."),
		writeStalls:       d("sepp_payload_store_write_stalls_total", "Write stalls of the payload store since the node opened it; each holds the apply of every entry behind it."),
	}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.compactions, c.compactionSeconds, c.inProgress, c.debt, c.flushes, c.readAmp, c.l0Files, c.l0Sublevels, c.memtable, c.tombstones, c.writeStalls} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	st, ok := c.n.fsm.PayloadStoreStats()
	if !ok {
		return
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter(c.compactions, float64(st.Compactions))
	counter(c.compactionSeconds, st.CompactionSeconds)
	gauge(c.inProgress, float64(st.CompactionsInProgress))
	gauge(c.debt, float64(st.CompactionDebtBytes))
	counter(c.flushes, float64(st.Flushes))
	gauge(c.readAmp, float64(st.ReadAmplification))
	gauge(c.l0Files, float64(st.L0Files))
	gauge(c.l0Sublevels, float64(st.L0Sublevels))
	gauge(c.memtable, float64(st.MemTableBytes))
	gauge(c.tombstones, float64(st.Tombstones))
	counter(c.writeStalls, float64(st.WriteStalls))
}
