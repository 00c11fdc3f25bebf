#!/bin/sh
# Debian's chromium for the browser tests of `tfdoctor report`, where apt is available.
# It never fails the test command: without Chromium those tests skip and say why.
command -v chromium >/dev/null 2>&1 && exit 0
command -v apt-get >/dev/null 2>&1 || { echo "install_chromium: no apt-get; the browser tests will skip" >&2; exit 0; }
if [ "$(id -u)" = 0 ]; then
  set --
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  set -- sudo -n
else
  echo "install_chromium: not root and no sudo; the browser tests will skip" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! { timeout 600 "$@" apt-get update -qq && timeout 900 "$@" apt-get install -y -qq chromium; } >/dev/null 2>&1
then
  echo "install_chromium: apt-get could not install chromium; the browser tests will skip" >&2
fi
exit 0
