// Package monitoring holds sepp's Prometheus alert rules (sepp-alerts.yml,
// unit-tested in sepp-alerts.test.yml) and its Grafana dashboard
// (grafana-sepp.json). Its tests check them: promtool check and test the
// rules, and every sepp_ metric they and the dashboard name must be one the
// server exports.
package monitoring
