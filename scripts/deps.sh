# scripts/deps.sh - sourced by scripts/test and scripts/demo: install the
# Debian packages ringsim needs, if any is missing (needs root or sudo).
RINGSIM_PACKAGES="build-essential cmake pkg-config clang libclang-rt-dev
  libjansson-dev libcmocka-dev libsqlite3-dev sqlite3
  python3 python3-numpy python3-matplotlib python3-torch"

ringsim_install_deps() {
  local missing=()
  for pkg in $RINGSIM_PACKAGES; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" ||
      missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "ringsim: installing ${missing[*]}" >&2
  $sudo apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" >/dev/null
}
