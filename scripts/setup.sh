#!/usr/bin/env bash
# Installs what is missing: Debian packages (apt-get update only when something is missing)
# and the pinned Python packages in .venv.  Running it again is fast and changes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

DEB_PACKAGES=(build-essential cmake pkg-config clang libclang-rt-14-dev
  libprotobuf-c-dev protobuf-c-compiler libcmocka-dev libcjson-dev libdnnl-dev
  libjpeg62-turbo-dev libopenjp2-7-dev libwebp-dev
  python3 python3-dev python3-venv python3-torch python3-torchvision)

missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

# The venv: pinned packages; rebuilt only when requirements.txt changes.
PY=${PYTHON:-python3}
stamp=.venv/.requirements.stamp
if [ ! -x .venv/bin/python ] || ! cmp -s requirements.txt "$stamp"; then
  echo "setup: creating .venv"
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
  cp requirements.txt "$stamp"
fi
