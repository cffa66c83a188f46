/*===- GlibcCompat.c - C library calls newer than the oldest supported --===*\
|*                                                                            *|
|* The C++ runtime linked into the distributed compiler library calls         *|
|* arc4random (glibc 2.36) for std::random_device. This local definition,     *|
|* which the linker prefers to the C library's, keeps the library loadable    *|
|* on glibc 2.34 and 2.35 (Ubuntu 22.04, common on GPU machines).             *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include <stdint.h>
#include <sys/random.h>

uint32_t arc4random(void) {
  uint32_t value;
  while (getrandom(&value, sizeof value, 0) != (ssize_t)sizeof value) {
  }
  return value;
}
