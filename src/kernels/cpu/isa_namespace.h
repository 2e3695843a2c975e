// The namespace of code compiled for one instruction set. The kernel headers' inline functions and templates are
// compiled into the portable, the AVX2 and the AVX-512 files alike; were their copies to share names, the linker
// would keep any one of them for all callers, and an AVX-512 copy (EVEX instructions) could run on a CPU without
// AVX-512. Each kernel header therefore puts its code in pagoda::inline PAGODA_ISA_NAMESPACE, a name per
// instruction set: the copies never merge, and qualified names (pagoda::quant_simd::...) read as before.
// tests/cli/isa_isolation_test.sh checks the built objects: no symbol an AVX-512 file shares with others holds
// an AVX-512 instruction.
#pragma once

#if defined(__AVX512F__)
#define PAGODA_ISA_NAMESPACE isa_avx512
#elif defined(__AVX2__)
#define PAGODA_ISA_NAMESPACE isa_avx2
#else
#define PAGODA_ISA_NAMESPACE isa_portable
#endif
