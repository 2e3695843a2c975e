// Line charts as a standalone SVG document, written by hand (no plotting dependency): a grid of panels, each with
// axes, "nice" tick values, a title, axis labels, one polyline per curve and, for several curves, a legend.
#pragma once

#include <string>
#include <vector>

namespace pagoda::loadgen {

struct PlotPoint {
  double x = 0;
  double y = 0;
};

struct Curve {
  std::string label;
  std::vector<PlotPoint> points;  // drawn in order; a curve without points is only listed in the legend
  bool markers = false;           // a dot at every point (for sparse series)
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<Curve> curves;
};

// The empirical CDF of a sample as a staircase: for the ascending values v[0..n), y steps from i/n to (i+1)/n at
// x = v[i]. Empty for an empty sample.
std::vector<PlotPoint> cdf_points(std::vector<double> values);

// All charts in one SVG document, `columns` panels per row, under a heading (one line of text per '\n'-separated
// line, the first in bold). The y axes start at 0.
std::string render_svg(const std::vector<LineChart>& charts, const std::string& heading, int columns = 2);

}  // namespace pagoda::loadgen
