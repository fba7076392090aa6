#!/bin/bash
# The image's HEALTHCHECK: GET /healthz on kadmit's admin listener, healthy on 200.
#
# bash's /dev/tcp does the HTTP request, so the slim image needs no curl (and none of
# curl's libraries). The port comes from KADMIT_ADMIN, the same variable kadmit reads,
# so moving the admin port moves the check with it. The admin listener must bind
# 0.0.0.0 or 127.0.0.1 for this to reach it (the image binds 0.0.0.0).
set -u
admin="${KADMIT_ADMIN:-127.0.0.1:9644}"
port="${admin##*:}"
exec 3<>"/dev/tcp/127.0.0.1/${port}" || exit 1
printf 'GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' >&3 || exit 1
IFS= read -r -t 2 status <&3 || exit 1
[[ "$status" == "HTTP/1.1 200"* ]]
