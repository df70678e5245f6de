// JFIF YCbCr to RGB for whole rows, rounded exactly as libjpeg's jdcolor.c
// (16-bit fixed point, round half up), so that a plane decode converted here
// gives libjpeg's own pixels. On x86-64 CPUs with AVX2 the rows go 16 pixels
// at a time in 16-bit lanes (the products split into libjpeg's high and low
// halves, so the result is the same to the bit); elsewhere a plain loop.
//
//   YccToRgbPlanes(y, cb, cr, n, r, g, b);  // three planes (CHW)
//   YccToRgbPixels(y, cb, cr, n, rgb);      // RGB triples (HWC)
//
// Thread safety: pure functions; no state, no allocation.
#ifndef STOKE_SRC_DECODE_COLOUR_H_
#define STOKE_SRC_DECODE_COLOUR_H_

#include <cstddef>
#include <cstdint>

namespace stoke::internal {

// n pixels of Y, Cb and Cr to n bytes each of R, G and B. The outputs must not
// overlap the inputs.
void YccToRgbPlanes(const uint8_t* y, const uint8_t* cb, const uint8_t* cr, size_t n, uint8_t* r,
                    uint8_t* g, uint8_t* b);

// n pixels of Y, Cb and Cr to 3n bytes of R, G, B triples.
void YccToRgbPixels(const uint8_t* y, const uint8_t* cb, const uint8_t* cr, size_t n, uint8_t* rgb);

}  // namespace stoke::internal

#endif  // STOKE_SRC_DECODE_COLOUR_H_
