# On the first control-plane node: the bucket's Object Lock is what the stack says (render/s3_object_lock.py, run
# with the node's python3; the store's access key and secret key on stdin, one per line). Reads only; fails on any
# difference, so a bucket made without lock, or with another retention, stops the run that declares it.
#@ include lib/strict.sh
#@ inputs ENDPOINT BUCKET REGION MODE DAYS CA_CERTIFICATE PROGRAM
command -v python3 >/dev/null || die "python3 is missing (cloud-init runs on it, so the node's image lacks cloud-init?)"
python3 -c "$PROGRAM" "$ENDPOINT" "$BUCKET" "$REGION" "$MODE" "$DAYS" "$CA_CERTIFICATE"
