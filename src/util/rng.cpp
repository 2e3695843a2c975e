#include "util/rng.h"

#include <cmath>

namespace pagoda {

double Rng::next_normal() {
  double u1 = next_double();
  if (u1 < 1e-300) u1 = 1e-300;
  const double u2 = next_double();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

}  // namespace pagoda
