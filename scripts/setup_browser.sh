#!/usr/bin/env bash
# Install headless Chromium (Debian's `chromium` package) for the site's browser test; no-op when present.
# Needs root and apt-get (about 1 minute). The Vega JavaScript needs no setup: the site builder writes it from the
# vl-convert-python wheel that scripts/setup.sh installs.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then exit 0; fi
if ! command -v apt-get >/dev/null 2>&1; then echo "setup_browser: no apt-get; install Chromium by hand" >&2; exit 1; fi
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null
command -v chromium
