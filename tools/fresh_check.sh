#!/usr/bin/env bash
# Fresh-machine check: run the README's "Two commands" on a minimal Debian 12 root.
#
# What it proves: a user who has only what the README names as the prerequisite (Debian 12
# with python3, python3-venv, python3-pip, make, git, ca-certificates, sudo) can clone the
# repository and run both README commands, as a non-root user with sudo, and they pass.
# Everything else (apt packages, the venv, Verilator, yowasp) must come from `make setup`.
#
# How: debootstrap --variant=minbase bookworm (cached as a pristine copy in
# $FRESH_DIR/base, default /var/tmp/openib-fresh; --rebuild-base renews it), copied to
# $FRESH_DIR/root for each run (outside the repository: the root holds /proc, /sys and /dev
# mounts that nothing walking the work tree may enter); the
# host's committed HEAD is cloned into /home/user/openib-switch (uncommitted changes are NOT
# part of the check); each command is run with chroot as `user` (passwordless sudo) in a
# clean environment. Prints each command's exit code and wall time; logs in $FRESH_DIR/logs.
#
# What it needs: root (debootstrap, chroot, mounts), debootstrap (installed with apt when
# missing), network to the Debian mirror the host's apt uses and to the PyPI the host's pip
# uses. Passed through as a user's own machine would have them: the host's extra CA
# certificates (/usr/local/share/ca-certificates), its pip configuration (/etc/pip.conf,
# /etc/xdg/pip, PIP_* variables) and the local directories that configuration points at
# (bind-mounted read-only), and /etc/resolv.conf.
#
# Usage: tools/fresh_check.sh [--rebuild-base] [--keep-root] [COMMAND ...]
#   COMMANDs default to the README's two commands (read from its "Two commands" block).
set -uo pipefail

top=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
cd "$top"
work=${FRESH_DIR:-/var/tmp/openib-fresh}
base=$work/base
root=$work/root
logs=$work/logs
suite=bookworm
rebuild=0
keep=0
cmds=()
for a in "$@"; do
  case "$a" in
    --rebuild-base) rebuild=1 ;;
    --keep-root) keep=1 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) cmds+=("$a") ;;
  esac
done

die() { echo "fresh-check: $*" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and bind mounts); run it as root or with sudo"

if [ ${#cmds[@]} -eq 0 ]; then
  # The commands a user is told to run: the `make ...` lines of the README's first sh block
  # after "## Two commands", without their comments.
  mapfile -t cmds < <(awk '/^## Two commands/{s=1} s&&/^```sh/{b=1;next} b&&/^```/{exit} b' README.md \
                      | sed 's/#.*//; s/[[:space:]]*$//' | grep -E '^make ')
  [ ${#cmds[@]} -gt 0 ] || die "README.md: no 'make ...' lines in the sh block under '## Two commands'"
fi

if ! command -v debootstrap >/dev/null; then
  echo "fresh-check: installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null \
    || die "debootstrap is missing and 'apt-get install debootstrap' failed"
fi

# The Debian mirror the host's apt uses (deb822 or one-line format).
mirror=$(grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -1)
[ -n "$mirror" ] || mirror=$(grep -hE '^deb ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}' | grep -v security | head -1)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
prereq=python3,python3-venv,python3-pip,make,git,ca-certificates,sudo

mounted() { findmnt -rn -o TARGET | grep -E "^$(readlink -f "$1")(/|$)" ; }
unmount_all() {
  local d=$1
  [ -d "$d" ] || return 0
  mounted "$d" | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  if [ -n "$(mounted "$d")" ]; then die "could not unmount everything under $d; not removing it"; fi
}
remove_tree() {  # never follows a mount (a bind of /dev or /opt must not be emptied)
  unmount_all "$1"
  rm -rf --one-file-system "$1"
}

mkdir -p "$work" "$logs"
[ $rebuild -eq 1 ] && remove_tree "$base"
if [ ! -x "$base/usr/bin/python3" ]; then
  remove_tree "$base"
  echo "fresh-check: debootstrap --variant=minbase --include=$prereq $suite from $mirror"
  t0=$(date +%s)
  debootstrap --variant=minbase --include="$prereq" "$suite" "$base" "$mirror" > "$logs/debootstrap.log" 2>&1 \
    || { tail -20 "$logs/debootstrap.log" >&2; die "debootstrap failed (log: $logs/debootstrap.log)"; }
  # The security suite, as a normal Debian 12 install has it.
  sec=$(grep -hE '^URIs:.*security' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | head -1)
  [ -n "$sec" ] && echo "deb $sec $suite-security main" >> "$base/etc/apt/sources.list"
  echo "deb $mirror $suite-updates main" >> "$base/etc/apt/sources.list"
  echo "fresh-check: base root built in $(( $(date +%s) - t0 )) s"
fi

remove_tree "$root"
cp -a "$base" "$root"

cleanup() { [ $keep -eq 1 ] && { unmount_all "$root"; return; }; remove_tree "$root"; }
trap cleanup EXIT

# What a user's machine would already have of its own: CA certificates, pip configuration
# (and the local package directories it names), name resolution.
cp /etc/resolv.conf "$root/etc/resolv.conf"
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  chroot "$root" update-ca-certificates >/dev/null 2>&1 || die "update-ca-certificates failed in the root"
fi
pipdirs=()
for f in /etc/pip.conf /etc/xdg/pip; do
  [ -e "$f" ] || continue
  mkdir -p "$root$(dirname "$f")"; cp -a "$f" "$root$(dirname "$f")/"
  while read -r p; do [ -d "$p" ] && pipdirs+=("$p"); done < <(grep -rhoE '(file://)?/[^ "]+' "$f" | sed 's|^file://||')
done
while read -r p; do [ -d "$p" ] && pipdirs+=("$p"); done < <(env | grep -E '^PIP_' | grep -oE '(file://)?/[^ ]+' | sed 's|^file://||')
# bind the top directory of each (e.g. /opt/pypi for /opt/pypi/simple), once
mapfile -t binds < <(for p in "${pipdirs[@]}"; do echo "$p" | awk -F/ '{print "/"$2"/"$3}'; done | sort -u)

mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
mount --bind /dev "$root/dev"
mount -t devpts devpts "$root/dev/pts" -o newinstance,ptmxmode=0666 2>/dev/null || true
mount -t tmpfs tmpfs "$root/dev/shm"
for b in "${binds[@]}"; do
  mkdir -p "$root$b"; mount --bind "$b" "$root$b"; mount -o remount,bind,ro "$root$b"
done

chroot "$root" useradd -m -s /bin/bash user || die "useradd failed in the root"
echo 'user ALL=(ALL) NOPASSWD: ALL' > "$root/etc/sudoers.d/user"; chmod 440 "$root/etc/sudoers.d/user"
rev=$(git rev-parse --short HEAD)
git clone -q --no-local "$top" "$root/home/user/openib-switch" || die "git clone failed"
git -C "$root/home/user/openib-switch" checkout -q "$rev"
chroot "$root" chown -R user:user /home/user

# A clean environment for the user: nothing of the host's but CA / pip settings.
envv=(HOME=/home/user USER=user LOGNAME=user SHELL=/bin/bash LANG=C.UTF-8 TERM=dumb
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
while IFS= read -r kv; do envv+=("$kv"); done < <(env | grep -E '^(PIP_[A-Z_]+|SSL_CERT_FILE|SSL_CERT_DIR|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|GIT_SSL_CAINFO)=')

echo "fresh-check: $(. "$root/etc/os-release"; echo "$PRETTY_NAME"), minbase + $prereq; repo at $rev"
printf '%-28s %6s %10s\n' command rc "wall (s)"
results=()
rc_all=0
for c in "${cmds[@]}"; do
  log="$logs/$(echo "$c" | tr -c 'A-Za-z0-9\n' '_').log"
  t0=$(date +%s)
  chroot --userspec=user:user "$root" env -i "${envv[@]}" bash -c "cd ~/openib-switch && $c" > "$log" 2>&1
  rc=$?
  dt=$(( $(date +%s) - t0 ))
  printf '%-28s %6d %10d   log: %s\n' "$c" "$rc" "$dt" "$log"
  results+=("$c rc=$rc wall=${dt}s")
  [ $rc -eq 0 ] || { rc_all=1; echo "--- last lines of $log:"; tail -15 "$log"; }
done
printf '%s\n' "${results[@]}" > "$work/summary.txt"
exit $rc_all
