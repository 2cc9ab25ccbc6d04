# rule `reference` alone on KernelBench's GELU at its own size (4096 x 393216 fp32)
set -u
W=/tmp/gelu; rm -rf $W; mkdir -p $W
cp tests/fixtures/kernelbench/26_GELU_.py $W/
/usr/bin/time -f "init %e s" python3 -m kopt.cli init $W/ws --kernelbench $W/26_GELU_.py > $OUT/gelu_init.txt 2>&1
mkdir -p $W/run
/usr/bin/time -f "snakemake %e s" timeout 200 python3 -m snakemake --cores 1 -d $W/run results/reference.json --config workspace=$W/ws > $OUT/gelu_snakemake.txt 2>&1
echo rc=$?
cp $W/run/results/reference.json $W/run/results/logs/reference.log $OUT/ 2>/dev/null
