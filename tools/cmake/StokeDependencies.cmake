# What the library builds on: Boost.Asio (headers), liburing, libcurl, zlib, libjpeg-turbo, moodycamel's
# ConcurrentQueue (headers), threads. tools/install_deps.sh installs them on Debian 12.
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
find_package(Boost 1.81 REQUIRED CONFIG)

# libjpeg-turbo: the libjpeg API (partial decoding) for the decoder, TurboJPEG
# for the benchmark's plain loop and the tests' reference decode.
find_library(STOKE_JPEG_LIBRARY NAMES jpeg REQUIRED)
find_path(STOKE_JPEG_INCLUDE jpeglib.h REQUIRED)
find_library(STOKE_TURBOJPEG_LIBRARY NAMES turbojpeg REQUIRED)
find_path(STOKE_TURBOJPEG_INCLUDE turbojpeg.h REQUIRED)

# libcurl (Debian's libcurl4-openssl-dev): remote data, s3:// and http(s)://.
find_library(STOKE_CURL_LIBRARY NAMES curl REQUIRED)
find_path(STOKE_CURL_INCLUDE curl/curl.h REQUIRED)

find_library(STOKE_URING_LIBRARY NAMES uring REQUIRED)
find_path(STOKE_URING_INCLUDE liburing.h REQUIRED)

find_path(STOKE_CONCURRENTQUEUE_INCLUDE concurrentqueue/blockingconcurrentqueue.h REQUIRED)
add_library(stoke_concurrentqueue INTERFACE)
target_include_directories(stoke_concurrentqueue SYSTEM INTERFACE ${STOKE_CONCURRENTQUEUE_INCLUDE})
