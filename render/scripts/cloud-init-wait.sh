# Run over SSH on a new Linux node (render/readiness.py): wait for cloud-init's final stage, in which the
# preparation script runs, and fail if it failed.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs CLOUD_INIT_TIMEOUT PREPARE_SCRIPT
#@ include lib/wait-for-cloud-init.sh

wait_for_cloud_init
# cloud-init writes boot-finished at the end of its final stage (runcmd ran).
[[ -f $ROOT/var/lib/cloud/instance/boot-finished ]] || die "cloud-init reports done but wrote no boot-finished"
echo "cloud-init finished"
