#!/usr/bin/env bash
# Makes what every hub process of deploy/hub-postgres shares, once: the CA (ca.crt, ca.key; each process
# signs its own serving certificate with it, so clients trust whichever process they reach) and the admin
# token (admin.token). Usage:
#
#   deploy/hub-postgres/make-credentials.sh hub-credentials
#   kubectl -n spacehub create secret generic spacehub-hub-credentials --from-file=hub-credentials
#
# The files are what a hub writes into its data dir on first start (pki/ca.crt, pki/ca.key, admin.token): a
# hub already running on the same database hands over its own instead, and the new processes join it.
# Needs OpenSSL 1.1.1 or later.
set -euo pipefail

if [ "$#" -ne 1 ]; then
    echo "usage: $0 DIR   (DIR must not exist; it receives ca.crt, ca.key and admin.token)" >&2
    exit 2
fi
out=$1
if ! command -v openssl >/dev/null 2>&1; then
    echo "$0: openssl is not installed (it makes the CA)" >&2
    exit 1
fi
if [ -e "$out" ]; then
    echo "$0: $out already exists; not overwriting credentials" >&2
    exit 1
fi

umask 077
mkdir -p "$out"
# An EC P-256 CA, as the hub makes its own: valid 10 years, allowed to sign only end-entity certificates.
openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -sha256 -days 3650 \
    -subj "/O=spacehub/CN=spacehub-ca" \
    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -addext "subjectKeyIdentifier=hash" \
    -keyout "$out/ca.key" -out "$out/ca.crt" 2>/dev/null
# 32 random bytes, URL-safe base64 without padding (what the hub makes when it has no token).
openssl rand -base64 32 | tr '+/' '-_' | tr -d '=\n' >"$out/admin.token"
chmod 0644 "$out/ca.crt"
echo "wrote $out/ca.crt, $out/ca.key and $out/admin.token (keep ca.key and admin.token secret)"
