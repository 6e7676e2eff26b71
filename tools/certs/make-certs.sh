#!/usr/bin/env bash
# Makes the certificates the TLS tests (and a local trial of HTTPS) use, in DIR:
#   ca.crt / ca.key                a throwaway certificate authority
#   server.crt / server.key        for localhost and 127.0.0.1, signed by it (ingress, NATS)
#   expired.crt / expired.key      the same names, signed by it, valid only in 2020
#   self-signed.crt / self-signed.key  the same names, signed by nobody the clients trust
# Every key is new on every run; nothing here is meant for production, where certificates
# come from the operator's own CA or ACME.
#
# Usage: make-certs.sh DIR
set -euo pipefail

dir="${1:?usage: make-certs.sh DIR}"
mkdir -p "${dir}"
cd "${dir}"

san="subjectAltName=DNS:localhost,IP:127.0.0.1"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

key ca.key
openssl req -x509 -new -key ca.key -sha256 -days 2 -subj "/CN=Shoal test CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" \
  -out ca.crt

key server.key
openssl req -new -key server.key -subj "/CN=localhost" -out server.csr
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -sha256 -days 2 \
  -extfile <(printf '%s\nextendedKeyUsage=serverAuth,clientAuth\n' "${san}") -out server.crt \
  2>/dev/null

# `openssl x509` cannot backdate; `openssl ca` can, with a minimal database of its own.
key expired.key
openssl req -new -key expired.key -subj "/CN=localhost" -out expired.csr
mkdir -p ca-db
: >ca-db/index.txt
cat >ca-db/openssl.cnf <<CNF
[ca]
default_ca = test
[test]
database = ca-db/index.txt
new_certs_dir = ca-db
serial = ca-db/serial
default_md = sha256
policy = any
copy_extensions = none
[any]
commonName = supplied
[server]
${san}
extendedKeyUsage = serverAuth
CNF
echo 1000 >ca-db/serial
openssl ca -batch -config ca-db/openssl.cnf -cert ca.crt -keyfile ca.key -in expired.csr \
  -startdate 20200101000000Z -enddate 20200102000000Z -extensions server -notext \
  -out expired.crt 2>/dev/null

key self-signed.key
openssl req -x509 -new -key self-signed.key -sha256 -days 2 -subj "/CN=localhost" \
  -addext "${san}" -out self-signed.crt

rm -rf server.csr expired.csr ca-db ca.srl
