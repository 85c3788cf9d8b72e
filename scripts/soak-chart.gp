# Draws the soak's samples (integration/soak_test.go writes soak.csv: one
# block per node) as one PNG of four panels: resident memory, goroutines, open
# files and disk use of each node over the run. Run by `make soak`:
#   gnuplot -e "csv='.cache/soak/soak.csv'; out='docs/soak.png'" scripts/soak-chart.gp
set datafile separator ","
set terminal pngcairo size 1400,1000 font "sans,11"
set output out
set multiplot layout 2,2 title "sepp soak: three nodes under mixed load, a fault every minute or two (gaps: the node was down)"
set xlabel "minutes"
set key top left
set grid
set yrange [0:*]
titles = "resident-memory-(MiB) goroutines open-files data-directory-(MiB)"
do for [p=3:6] {
  t = word(titles, p-2)
  set title system(sprintf("echo '%s' | tr '-' ' '", t))
  plot for [i=0:2] csv index i using ($1/60):p with lines lw 1.5 title sprintf("sepp-%d", i+1)
}
unset multiplot
