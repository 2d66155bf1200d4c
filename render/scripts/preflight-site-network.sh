# Preflight, on one Proxmox node: the site's network as the nodes will see it. Reads only (ARP duplicate-address
# probes, DNS queries, one NTP exchange, TLS handshakes); prints one tab-separated line per probe for tools/preflight
# to judge, and exits 0 unless bash itself fails.
## arping -D (iputils) sends from 0.0.0.0, so the node needs no address on the network; its exit status alone is not
## enough (0 on an interface that cannot ARP), so the output travels with it (iputils arping.c finish(); the notes of
## #41 show each case run). Without arping (it is not a Proxmox VE dependency), a datagram makes the kernel resolve the
## address and `ip -j neigh` tells whether anything answered (iproute2 is: ifupdown2 depends on it).
## DNS goes through Perl's Net::DNS (pve-manager depends on libnet-dns-perl); NTP through `chronyd -Q`, which prints
## the offset and sets nothing, and binds no server or command socket (chrony main.c, conf.c: client only).
## openssl s_client checks each endpoint's chain as its client will (the stack's CA given on a file descriptor: nothing
## is written); containerd adds a mirror's hosts.toml `ca` to the system's pool (containerd
## core/remotes/docker/config/hosts.go: rootSystemPool, then AppendCertsFromPEM).
#@ include lib/strict.sh
#@ inputs IFACE ADDRESSES[] DNS_PORT DNS_SERVERS[] DNS_NAMES[] NTP_SERVERS[] TLS_NAMES[] TLS_HOSTS[] TLS_PORTS[] TLS_CAS[] TLS_MODES[]
PARALLEL=32
one_line() { tr '\n\t' '| ' | head -c 2000; }
limit_jobs() {
  while [ "$(jobs -rp | wc -l)" -ge "$PARALLEL" ]; do wait -n || true; done
}

probe_address() {
  local ip=$1 out rc=0
  ## ARP never hears this node's own addresses: they are reported as such.
  if [ -n "$(ip -o addr show to "$ip/32" 2>/dev/null)" ]; then
    printf 'local\t%s\n' "$ip"
  elif [ "$ARP_TOOL" = arping ]; then
    out=$(arping -D -c 2 -w 3 -I "$IFACE" "$ip" 2>&1) || rc=$?
    printf 'arping\t%s\t%s\t%s\n' "$ip" "$rc" "$(printf '%s' "$out" | one_line)"
  else
    ping -c 1 -W 1 -I "$IFACE" "$ip" >/dev/null 2>&1 || true
    sleep 2
    printf 'neigh\t%s\t%s\n' "$ip" "$(ip -j neigh show to "$ip" dev "$IFACE" 2>&1 | one_line)"
  fi
}

probe_dns() {
  local server=$1 name=$2 out
  # shellcheck disable=SC2016 # Perl's own variables
  out=$(timeout 10 perl -MNet::DNS -e '
    my ($server, $port, $name) = @ARGV;
    my $r = Net::DNS::Resolver->new(nameservers => [$server], port => $port, recurse => 1, retry => 2,
                                    retrans => 1, udp_timeout => 3, tcp_timeout => 3, defnames => 0, dnsrch => 0);
    my $p = $r->send($name, "A");
    if (!$p) { print "ERROR ", $r->errorstring; exit 0 }
    print join(" ", $p->header->rcode, map { $_->type eq "A" ? $_->address : () } $p->answer);
  ' "$server" "$DNS_PORT" "$name" 2>&1) || out="ERROR $(printf '%s' "$out" | one_line)"
  printf 'dns\t%s\t%s\t%s\n' "$server" "$name" "$(printf '%s' "$out" | one_line)"
}

if [ -z "$IFACE" ]; then
  printf 'iface\t-\tnone\n'
elif ip link show dev "$IFACE" >/dev/null 2>&1; then
  printf 'iface\t%s\tpresent\n' "$IFACE"
  if command -v arping >/dev/null && arping -V 2>&1 | grep -q iputils; then ARP_TOOL=arping; else ARP_TOOL=neigh; fi
  printf 'tool\tarp\t%s\n' "$ARP_TOOL"
  for ip in "${ADDRESSES[@]}"; do
    limit_jobs
    probe_address "$ip" &
  done
else
  printf 'iface\t%s\tmissing\n' "$IFACE"
fi

if perl -MNet::DNS -e 1 2>/dev/null; then
  for server in "${DNS_SERVERS[@]}"; do
    for name in "${DNS_NAMES[@]}"; do
      limit_jobs
      probe_dns "$server" "$name" &
    done
  done
else
  printf 'tool\tdns\tmissing\n'
fi
wait

if command -v chronyd >/dev/null; then
  for server in "${NTP_SERVERS[@]}"; do
    rc=0
    out=$(timeout 15 chronyd -Q -t 6 "server $server iburst maxsamples 1" 2>&1) || rc=$?
    printf 'ntp\t%s\t%s\t%s\n' "$server" "$rc" "$(printf '%s' "$out" | one_line)"
  done
else
  printf 'tool\tntp\tmissing\n'
fi

for i in "${!TLS_NAMES[@]}"; do
  name=${TLS_NAMES[$i]} host=${TLS_HOSTS[$i]} port=${TLS_PORTS[$i]} ca=${TLS_CAS[$i]} mode=${TLS_MODES[$i]} rc=0
  if [ "$mode" = tcp ]; then
    # shellcheck disable=SC2016 # expanded by the inner bash
    timeout 5 bash -c ': >"/dev/tcp/$1/$2"' _ "$host" "$port" 2>/dev/null || rc=$?
    printf 'tcp\t%s\t%s\n' "$i" "$rc"
    continue
  fi
  args=(-connect "$host:$port" -verify_return_error -brief)
  if [[ $name =~ ^[0-9.]+$ ]]; then args+=(-verify_ip "$name"); else args+=(-servername "$name" -verify_hostname "$name"); fi
  ## -CAfile alone replaces the system's CAs: what a client that trusts only its configured CA does ("only": Fluent
  ## Bit's tls.ca_file, the collector's ca_file). containerd adds a mirror's CA to the system's pool, and Go anchors on
  ## any certificate there, an intermediate CA too ("pool": the system's directory, the CA, -partial_chain).
  if [ -n "$ca" ] && [ "$mode" = pool ]; then
    args+=(-CApath /etc/ssl/certs -partial_chain)
  fi
  if [ -n "$ca" ]; then
    out=$(timeout 10 openssl s_client "${args[@]}" -CAfile <(printf '%s\n' "$ca") </dev/null 2>&1) || rc=$?
  else
    out=$(timeout 10 openssl s_client "${args[@]}" </dev/null 2>&1) || rc=$?
  fi
  printf 'tls\t%s\t%s\t%s\n' "$i" "$rc" "$(printf '%s' "$out" | grep -iE 'verif|error|connect' | one_line)"
done
