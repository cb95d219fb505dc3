# scripts/deps.sh - sourced by scripts/test, scripts/demo and
# scripts/doc-images: install the Debian packages ringsim needs, if any is
# missing (needs root or sudo).
#
#   ringsim_install_deps          to build and run ringsim and its plot tools
#   ringsim_install_deps test     also what the tests need: cmocka, clang and
#                                 libFuzzer, PyTorch for the round-trip test,
#                                 Open MPI for the bit-for-bit comparison,
#                                 Chromium and Selenium for the viewer (html),
#                                 jsonschema for the --json schemas, venv,
#                                 setuptools and wheel for pip's install
#                                 (tests/test_pip.py), universal-ctags for
#                                 the parameter count (tests/test_params.py)
RINGSIM_PACKAGES="build-essential cmake pkg-config libjansson-dev
  libsqlite3-dev sqlite3 python3 python3-numpy python3-matplotlib"
RINGSIM_TEST_PACKAGES="libcmocka-dev clang libclang-rt-dev python3-torch
  openmpi-bin libopenmpi-dev chromium chromium-driver python3-selenium
  python3-jsonschema python3-venv python3-setuptools python3-wheel
  groff-base universal-ctags"

ringsim_install_deps() {
  local wanted=$RINGSIM_PACKAGES missing=()
  [ "${1:-}" = test ] && wanted="$wanted $RINGSIM_TEST_PACKAGES"
  for pkg in $wanted; do
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
