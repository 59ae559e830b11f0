# SPDX-License-Identifier: MIT
# shellcheck shell=sh
#
# windows-deps.sh: the recipe for the four libraries llm-sandbox needs on
# Windows, cross-built with mingw-w64 from their Debian source packages.
# Sourced by scripts/build-windows.sh, which sets TRIPLE, TOOLCHAIN, JOBS,
# CACHE, KEY, PREFIX, VERSIONS (" name=version ..."), ROOT, say(), die() and
# apt_private(). The hash of this file (with the toolchain file and the
# source versions) is the cache key: a change here rebuilds them.
#
# build_deps: fetch and unpack the sources in $CACHE/work-$KEY, build them
# into $PREFIX.partial, then move that to $PREFIX (so a cut-short build
# never looks complete) and remove the work directory.

build_deps() {
    work=$CACHE/work-$KEY
    stage=$PREFIX.partial
    rm -rf "$work" "$stage"
    mkdir -p "$work" "$stage"
    cd "$work"
    say "fetching sources:$VERSIONS"
    # shellcheck disable=SC2086
    apt_private apt-get source --only-source $VERSIONS >"$work/apt-source.log" 2>&1 ||
        { cat "$work/apt-source.log" >&2; die "apt-get source failed"; }
    cmake_dep() { # source dir, extra options
        d=${1%/}
        shift
        cmake -S "$d" -B "$d/_build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" \
            -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$stage" \
            -DBUILD_SHARED_LIBS=ON "$@" >"$d.log" 2>&1 &&
            cmake --build "$d/_build" -j "$JOBS" >>"$d.log" 2>&1 &&
            cmake --install "$d/_build" >>"$d.log" 2>&1 ||
            { tail -40 "$d.log" >&2; die "building $d failed (log: $d.log)"; }
    }
    configure_dep() { # source dir, configure options
        d=${1%/}
        shift
        (cd "$d" && ./configure --host=$TRIPLE --prefix="$stage" "$@") >"$d.log" 2>&1 ||
            { tail -40 "$d.log" >&2; die "configuring $d failed (log: $d.log)"; }
    }

    say "building libyaml (CMake)"
    cmake_dep "$work"/libyaml-*/ -DBUILD_TESTING=OFF -DINSTALL_CMAKE_DIR=lib/cmake/yaml
    # libyaml's CMake build installs no pkg-config file: write the one its
    # autotools build would.
    yv=$(echo "$VERSIONS" | sed -n 's/.*libyaml=\([0-9.]*\).*/\1/p')
    mkdir -p "$stage/lib/pkgconfig"
    cat > "$stage/lib/pkgconfig/yaml-0.1.pc" <<EOF
prefix=$stage
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: LibYAML
Description: Library to parse and emit YAML
Version: $yv
Cflags: -I\${includedir}
Libs: -L\${libdir} -lyaml
EOF

    say "building json-c (CMake)"
    cmake_dep "$work"/json-c-*/ -DBUILD_TESTING=OFF -DDISABLE_WERROR=ON \
        -DBUILD_STATIC_LIBS=OFF

    say "building libltdl (libtool, configure --host=$TRIPLE)"
    lt=$(echo "$work"/libtool-*)
    configure_dep "$lt" --enable-ltdl-install
    # Debian's patches leave the manual pages older than their sources;
    # regenerating them needs help2man and makeinfo, which are not needed.
    (cd "$lt" && make -j "$JOBS" HELP2MAN=true MAKEINFO=true &&
        make install HELP2MAN=true MAKEINFO=true) >>"$lt.log" 2>&1 ||
        { tail -40 "$lt.log" >&2; die "building libtool failed (log: $lt.log)"; }

    say "building libcurl with Schannel (configure --host=$TRIPLE)"
    cu=$(echo "$work"/curl-*)
    configure_dep "$cu" --with-schannel --without-openssl --without-gnutls \
        --without-libpsl --without-brotli --without-zstd --without-libidn2 \
        --without-nghttp2 --without-ngtcp2 --without-nghttp3 --without-librtmp \
        --without-libssh2 --without-zlib --disable-ldap --disable-ldaps \
        --disable-manual --disable-static --enable-shared
    (cd "$cu" && make -C lib -j "$JOBS" && make -C lib install && make -C include install &&
        make install-pkgconfigDATA) >>"$cu.log" 2>&1 ||
        { tail -40 "$cu.log" >&2; die "building curl failed (log: $cu.log)"; }

    echo "$VERSIONS" > "$stage/VERSIONS"
    # Paths inside .pc, .la and script files name the staging directory;
    # text files only (-I): a path of another length would break a binary.
    grep -rlI "$stage" "$stage" 2>/dev/null | xargs -r sed -i "s|$stage|$PREFIX|g"
    mv "$stage" "$PREFIX"
    cd "$ROOT"
    rm -rf "$work"
}

