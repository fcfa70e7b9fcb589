#!/usr/bin/env bash
# Install headless Chromium (Debian's `chromium` package) for the site's browser test; a no-op when present.
# Needs root (or sudo) and apt-get; about a minute. Concurrent callers wait on a lock instead of racing apt.
# The Vega JavaScript needs no setup: the site builder writes it from the vl-convert-python wheel (scripts/setup.sh).
set -euo pipefail
have() { command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; }
have && exit 0
if ! command -v apt-get >/dev/null 2>&1; then echo "setup_browser: no apt-get here; install Chromium by hand" >&2; exit 1; fi
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
exec 9>"${TMPDIR:-/tmp}/proposal_nb_setup_browser.lock"
flock 9
have && exit 0
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null
command -v chromium
