#!/usr/bin/env bash
# Stand-ins for the upstream writers that run beside galactic-translator
# today (../shared/UPSTREAM.md §3), writing the way they write: raw API
# calls, method and status code explicit. Used by tests/demo/demo.sh
# (sourced) and tests/netns/test_upstream_e2e.c (run as a command).
#
#   compute      creates one NetworkInterfaceClaim per pod (spec only)
#   NSO          creates the NetworkContext of each VPC (spec.location,
#                spec.network, and spec.egress.internet when the network
#                declares internet egress: mode Enabled, reach),
#                creates the NetworkInterface named as the claim
#                (spec.claimRef, spec.addresses) and binds both by
#                whole-status PUT with resourceVersion (Status().Update),
#                409: read again; a poll loop re-derives the claim's Ready
#                (Bound, Allocated, Prepared, Programmed) from what the
#                translator writes
#   VPC operator creates the VPCAttachment (same name, controller-owned by
#                the interface, interfaceRef.name, the interface's
#                addresses) and writes its own status fields (vpc,
#                vpcAttachment, networkAttachmentDefinition, Ready) by
#                whole-status PUT
#
# As a command:
#   incumbents.sh CPDIR WORKDIR NS claim NAME NETWORK
#   incumbents.sh CPDIR WORKDIR NS network-context NAME NETWORK [FAMILY ...]  (FAMILY: egress reach)
#   incumbents.sh CPDIR WORKDIR NS interface NAME NETWORK [ADDR/LEN ...]   prints the uid
#   incumbents.sh CPDIR WORKDIR NS vpc-operator NAME VPC-ID ATT-ID UID [ADDR/LEN ...]
#   incumbents.sh CPDIR WORKDIR NS pods <LINES   (NAME NETWORK VPC-ID ATT-ID [ADDR/LEN ...] a line: all three writers, one apply per kind)
#   incumbents.sh CPDIR WORKDIR NS nso-loop        (until WORKDIR/nso.stop exists)
# Sourced: inc_init CPDIR WORKDIR NS, then inc_claim, inc_network_context, inc_interface,
# inc_vpc_operator, inc_pods, inc_nso_pass, inc_nso_loop with the same arguments.
# WORKDIR gets the loop's scratch files, conflicts.<manager> (one line per
# 409) and, per claim, programmed.<name> / ready.<name> (epoch ms when the
# NSO loop first saw the translator's Programmed=True / made Ready=True).

inc_init() { # cpdir workdir namespace
  INC_CP=$1 INC_D=$2 INC_NS=$3
  INC_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  # shellcheck disable=SC1091
  . "$INC_CP/env"
  INC_NI=$APISERVER/apis/networking.datumapis.com/v1alpha/namespaces/$INC_NS/networkinterfaces
  INC_NIC=$APISERVER/apis/networking.datumapis.com/v1alpha/namespaces/$INC_NS/networkinterfaceclaims
  INC_VA=$APISERVER/apis/cloud.datumapis.com/v1alpha1/namespaces/$INC_NS/vpcattachments
  mkdir -p "$INC_D"
}
inc_api() { curl -sS --cacert "$CP_CA" -H "Authorization: Bearer $CP_TOKEN" "$@"; }
inc_k() { "$INC_TOP"/tests/controlplane/cp.sh kubectl "$INC_CP" "$@"; }
inc_now_ms() { date +%s%3N; }

# jq helpers for metav1.Condition lists: set a condition (lastTransitionTime
# kept unless status changes), read one.
# shellcheck disable=SC2016 # jq's own $variables
INC_JQ_COND='
def setc($t; $s; $r; $m; $now; $gen):
  if any(.[]; .type == $t)
  then map(if .type == $t
           then (if .status == $s then . else .lastTransitionTime = $now end)
                | .status = $s | .reason = $r | .message = $m | .observedGeneration = $gen
           else . end)
  else . + [{type: $t, status: $s, reason: $r, message: $m, lastTransitionTime: $now, observedGeneration: $gen}]
  end;
def cond($t): ((.status.conditions // [])[] | select(.type == $t) | .status) // "";
'

# Status().Update: PUT the whole object to /status; the resourceVersion in it
# is the optimistic lock. Prints the HTTP code; a 409 is counted (the caller
# reads again and retries, as a controller-runtime requeue does).
inc_put_status() { # url-of-object manager object-json
  local code
  code=$(inc_api -o "$INC_D/put.out" -w '%{http_code}' -X PUT -H 'Content-Type: application/json' \
             --data-binary @- "$1/status?fieldManager=$2" <<<"$3")
  [ "$code" = 409 ] && echo 1 >>"$INC_D/conflicts.$2"
  echo "$code"
}

# ADDR/LEN ... as NetworkInterface spec.addresses (the first is primary).
inc_ni_addrs() {
  local a first=true fam; local -a inc_items=()
  for a in "$@"; do
    case $a in *:*) fam=IPv6 ;; *) fam=IPv4 ;; esac
    if $first; then inc_items+=("{\"family\":\"$fam\",\"address\":\"$a\",\"primary\":true}"); first=false
    else inc_items+=("{\"family\":\"$fam\",\"address\":\"$a\"}"); fi
  done
  local IFS=,; echo "[${inc_items[*]}]"
}
inc_json_list() { local a; local -a inc_items=(); for a in "$@"; do inc_items+=("\"$a\""); done; local IFS=,; echo "[${inc_items[*]}]"; }

# compute: the claim (spec only; immutable upstream).
inc_claim_json() { # name network
  cat <<J
{"apiVersion":"networking.datumapis.com/v1alpha","kind":"NetworkInterfaceClaim",
 "metadata":{"name":"$1","namespace":"$INC_NS"},
 "spec":{"network":{"name":"$2"},"attachmentMode":"Netns","interfaceName":"eth0","ipFamilies":["IPv6","IPv4"]}}
J
}
inc_claim() { # name network
  inc_claim_json "$1" "$2" | inc_k apply -f - >/dev/null
}

# NSO: the NetworkContext of a network in a location, named as the VPC the
# attachments name (spec.vpc.name, lower case), which is where the translator's egress
# binder reads the declaration (docs/translator.md, "Internet egress"). With
# FAMILY arguments: spec.egress.internet {mode: Enabled, reach: [FAMILY...]}
# (upstream's CEL accepts IPv6 only); without: no egress block (never
# projected, not Disabled).
inc_network_context() { # name network [family ...]
  local name=$1 net=$2 eg=
  shift 2
  [ $# -gt 0 ] && eg=",\"egress\":{\"internet\":{\"mode\":\"Enabled\",\"reach\":$(inc_json_list "$@")}}"
  inc_k apply -f - >/dev/null <<J
{"apiVersion":"networking.datumapis.com/v1alpha","kind":"NetworkContext",
 "metadata":{"name":"$name","namespace":"$INC_NS"},
 "spec":{"location":{"name":"demo"},"network":{"name":"$net"}$eg}}
J
}

# NSO, binding: the interface named as the claim, spec.claimRef back to it
# (no ownerReference, as upstream); no address: the guest addresses itself
# (the VPC operator then renders no ipam). Prints the interface's uid.
inc_interface_json() { # name network [addr/len ...]
  local name=$1 net=$2; shift 2
  cat <<J
{"apiVersion":"networking.datumapis.com/v1alpha","kind":"NetworkInterface",
 "metadata":{"name":"$name","namespace":"$INC_NS"},
 "spec":{"network":{"name":"$net"},"claimRef":{"name":"$name"},"interfaceName":"eth0","mtu":1400,
  "addresses":$(inc_ni_addrs "$@")}}
J
}
inc_interface() { # name network [addr/len ...]
  inc_interface_json "$@" | inc_k apply -o jsonpath='{.metadata.uid}' -f -
}

# NSO, one pass: each interface's phase/networkContextRef/Allocated and each
# claim's networkInterfaceRef, addresses (objects, copied from the
# interface), Bound, Allocated and Ready = Bound ∧ Allocated ∧ Prepared ∧
# Programmed (else False, reason Not<first type not True>), re-derived from
# the list as read, so a change of the translator's Prepared/Programmed is
# picked up on the next pass. Whole-status PUT only when something changed;
# a 409 reads that object again and writes it at once, up to 5 times (as
# controller-runtime requeues a conflict, from a fresh read), then leaves it
# to the next pass. A poll loop stands in for NSO's watch.
# shellcheck disable=SC2016 # jq's own $variables
INC_JQ_NSO_NI='
    .items[] | . as $o
    | .status.phase = "Bound" | .status.networkContextRef = {name: ("ctx-" + .spec.network.name)}
    | .status.conditions = ((.status.conditions // []) | setc("Allocated"; "True"; "AddressesAllocated"; "addresses allocated"; $now; $o.metadata.generation))
    | select(.status != $o.status)'
# shellcheck disable=SC2016
INC_JQ_NSO_NIC='
    ($ni[0].items | map({key: .metadata.name, value: .}) | from_entries) as $ifs
    | .items[] | . as $o | $ifs[.metadata.name] as $nif
    | select($nif != null and $nif.spec.claimRef.name == .metadata.name)
    | .status.networkInterfaceRef = {name: $nif.metadata.name}
    | .status.addresses = [($nif.spec.addresses // [])[] | {family, address} + (if .primary then {primary} else {} end)]
    | .status.conditions = ((.status.conditions // [])
        | setc("Bound"; "True"; "Bound"; "bound to NetworkInterface " + $nif.metadata.name; $now; $o.metadata.generation)
        | setc("Allocated"; "True"; "AddressesAllocated"; "addresses allocated"; $now; $o.metadata.generation))
    | ([("Bound", "Allocated", "Prepared", "Programmed") as $t | select(cond($t) != "True") | $t] | first) as $not
    | .status.conditions |= (if $not == null
        then setc("Ready"; "True"; "Ready"; "claim is ready"; $now; $o.metadata.generation)
        else setc("Ready"; "False"; "Not" + $not; $not + " is not True"; $now; $o.metadata.generation) end)
    | select(.status != $o.status)'
inc_nso_pass() {
  local now o code name
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  inc_api "$INC_NI" >"$INC_D/nso.ni.json" || return 0
  inc_api "$INC_NIC" >"$INC_D/nso.nic.json" || return 0
  for name in $(jq -r "$INC_JQ_COND"'.items[] | select(cond("Programmed") == "True") | .metadata.name' "$INC_D/nso.nic.json"); do
    [ -e "$INC_D/programmed.$name" ] || inc_now_ms >"$INC_D/programmed.$name"
  done
  jq -c --arg now "$now" "$INC_JQ_COND$INC_JQ_NSO_NI" "$INC_D/nso.ni.json" |
  while read -r o; do
    name=$(jq -r .metadata.name <<<"$o")
    code=$(inc_put_status "$INC_NI/$name" network-services-operator "$o")
    for _ in 1 2 3 4 5; do # a conflict: read again, at once (controller-runtime's requeue)
      [ "$code" = 409 ] || break
      o=$(inc_api "$INC_NI/$name" | jq -c '{items: [.]}' | jq -c --arg now "$now" "$INC_JQ_COND$INC_JQ_NSO_NI")
      [ -n "$o" ] || break
      code=$(inc_put_status "$INC_NI/$name" network-services-operator "$o")
    done
  done
  jq -c --arg now "$now" --slurpfile ni "$INC_D/nso.ni.json" "$INC_JQ_COND$INC_JQ_NSO_NIC" "$INC_D/nso.nic.json" |
  while read -r o; do
    name=$(jq -r .metadata.name <<<"$o")
    code=$(inc_put_status "$INC_NIC/$name" network-services-operator "$o")
    for _ in 1 2 3 4 5; do # a conflict: read again, at once (controller-runtime's requeue)
      [ "$code" = 409 ] || break
      o=$(inc_api "$INC_NIC/$name" | jq -c '{items: [.]}' |
            jq -c --arg now "$now" --slurpfile ni "$INC_D/nso.ni.json" "$INC_JQ_COND$INC_JQ_NSO_NIC")
      [ -n "$o" ] || break
      code=$(inc_put_status "$INC_NIC/$name" network-services-operator "$o")
    done
    if [ "$code" = 200 ] && [ ! -e "$INC_D/ready.$name" ] &&
       [ "$(jq -r "$INC_JQ_COND"'cond("Ready")' "$INC_D/put.out")" = True ]; then
      inc_now_ms >"$INC_D/ready.$name"
    fi
  done
}
inc_nso_loop() {
  set +e
  while [ ! -e "$INC_D/nso.stop" ]; do inc_nso_pass; sleep 0.3; done
}

# VPC operator (the cloud NetworkInterfaceReconciler): the attachment named as
# the interface, controller-owned by it, interfaceRef.name, spec.vpc.name the
# VPC object's name (a Kubernetes name: here the VPC's base62 id in lower
# case; the id itself goes to status.vpc); then its own
# status fields (the ids it allocated, the NAD, Ready) by Status().Update:
# read, set, PUT with resourceVersion, again on 409.
inc_attachment_json() { # name vpc-id interface-uid [addr/len ...]
  local name=$1 vpc=$2 uid=$3
  shift 3
  cat <<J
{"apiVersion":"cloud.datumapis.com/v1alpha1","kind":"VPCAttachment",
 "metadata":{"name":"$name","namespace":"$INC_NS",
  "ownerReferences":[{"apiVersion":"networking.datumapis.com/v1alpha","kind":"NetworkInterface",
   "name":"$name","uid":"$uid","controller":true,"blockOwnerDeletion":true}]},
 "spec":{"vpc":{"name":"${vpc,,}"},"interfaceRef":{"name":"$name"},
  "interface":{"name":"eth0","mode":"Netns","addresses":$(inc_json_list "$@")}}}
J
}
inc_vpc_operator() { # name vpc-id attachment-id interface-uid [addr/len ...]
  local name=$1 vpc=$2 att=$3 uid=$4
  shift 4
  inc_attachment_json "$name" "$vpc" "$uid" "$@" | inc_k apply -f - >/dev/null || return 1
  inc_vpc_status "$name" "$vpc" "$att"
}
# The VPC operator's own status fields of attachment name (Status().Update, again on 409).
inc_vpc_status() { # name vpc-id attachment-id
  local name=$1 vpc=$2 att=$3 o code
  for _ in $(seq 20); do
    o=$(inc_api "$INC_VA/$name" | jq -c --arg now "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --arg vpc "$vpc" --arg att "$att" "$INC_JQ_COND"'
      . as $o | .status.vpc = $vpc | .status.vpcAttachment = $att
      | .status.networkAttachmentDefinition = .metadata.name | .status.observedGeneration = .metadata.generation
      | .status.conditions = ((.status.conditions // [])
          | setc("Ready"; "True"; "AttachmentDefinitionReady"; "NetworkAttachmentDefinition " + $o.metadata.name + " is ready for use"; $now; $o.metadata.generation))')
    code=$(inc_put_status "$INC_VA/$name" vpc-operator "$o")
    [ "$code" = 200 ] && return 0
    [ "$code" = 409 ] || { echo "vpc-operator: PUT $name/status: HTTP $code: $(cat "$INC_D/put.out")" >&2; return 1; }
  done
  echo "vpc-operator: $name: still 409 after 20 tries" >&2; return 1
}

# compute, NSO and the VPC operator for a burst of pods scheduled together,
# one line each on stdin: NAME NETWORK VPC-ID ATT-ID [ADDR/LEN ...]. The
# objects and write methods of inc_claim, inc_interface and
# inc_vpc_operator, with one kubectl apply (a List) per kind.
inc_pods() {
  local name net vpc att uid x; local -a inc_rest inc_cl=() inc_if=() inc_at=() inc_v=()
  local -A inc_addrs inc_uids
  while read -r name net vpc att inc_rest; do
    [ -n "$name" ] || continue
    read -r -a inc_rest <<<"$inc_rest"
    inc_cl+=("$(inc_claim_json "$name" "$net")")
    inc_if+=("$(inc_interface_json "$name" "$net" "${inc_rest[@]}")")
    inc_addrs[$name]=${inc_rest[*]} inc_v+=("$name $vpc $att")
  done
  [ ${#inc_cl[@]} -gt 0 ] || return 0
  inc_list() { local IFS=,; echo "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[$*]}"; }
  inc_list "${inc_cl[@]}" | inc_k apply -f - >/dev/null || return 1
  while read -r name uid; do inc_uids[$name]=$uid; done < <(inc_list "${inc_if[@]}" | inc_k apply -o json -f - |
    jq -r '(.items // [.])[] | "\(.metadata.name) \(.metadata.uid)"')
  for x in "${inc_v[@]}"; do
    read -r name vpc att <<<"$x"
    [ -n "${inc_uids[$name]:-}" ] || { echo "inc_pods: no uid for interface $name" >&2; return 1; }
    # shellcheck disable=SC2086 # the addresses, one word each
    inc_at+=("$(inc_attachment_json "$name" "$vpc" "${inc_uids[$name]}" ${inc_addrs[$name]})")
  done
  inc_list "${inc_at[@]}" | inc_k apply -f - >/dev/null || return 1
  for x in "${inc_v[@]}"; do
    read -r name vpc att <<<"$x"
    inc_vpc_status "$name" "$vpc" "$att" || return 1
  done
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  [ $# -ge 4 ] || { sed -n '2,/^$/p' "$0" >&2; exit 2; }
  inc_init "$1" "$2" "$3"
  cmd=$4; shift 4
  case $cmd in
    claim) inc_claim "$@" ;;
    network-context) inc_network_context "$@" ;;
    interface) inc_interface "$@" ;;
    vpc-operator) inc_vpc_operator "$@" ;;
    pods) inc_pods ;;
    nso-pass) inc_nso_pass ;;
    nso-loop) inc_nso_loop ;;
    *) echo "incumbents.sh: unknown command $cmd" >&2; exit 2 ;;
  esac
fi
