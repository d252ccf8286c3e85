# Throughput of each device path against operation size, next to the host
# doing the same work, from the sweep the device benchmark writes
# (columns: path, size in bytes, device MiB/s, host MiB/s; one block per
# path). Run by scripts/bench.sh with data= and out= set.
set terminal pngcairo size 1500,900 font ",11"
set output out
set logscale x 2
set xtics ("64 KiB" 65536, "256 KiB" 262144, "1 MiB" 1048576, "4 MiB" 4194304, \
	   "16 MiB" 16777216, "64 MiB" 67108864)
set xlabel "operation size"
set ylabel "MiB/s"
set yrange [0:*]
set key bottom right
set grid
# in the order of the benchmark's paths (tests/bench/pagoda-bench.c)
titles = "'virtual transfer, 4 KiB pages' 'virtual transfer, 64 KiB pages' 'virtual transfer, scattered 4 KiB pages' 'virtual transfer, 64 KiB tiles, 4 KiB entries' 'virtual transfer, 64 KiB tiles, LEAF64' 'virtual fill, 4 KiB pages' 'physical fill, VRAM' 'virtual transfer, from a linked GPU'"
hosts = "'host memcpy' 'host memcpy' 'host copy, same page order' 'host copy, same tile order' 'host copy, same tile order' 'host 32-bit fill' 'host 32-bit fill' 'host memcpy'"
set multiplot layout 3,3 title "Pagoda device: throughput against operation size"
do for [i = 0:7] {
	set title word(titles, i + 1)
	plot data index i using 2:3 with linespoints lw 2 pt 7 title "device", \
	     data index i using 2:4 with linespoints lw 2 dt 2 pt 5 title word(hosts, i + 1)
}
unset multiplot
