#include "loadgen/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace pagoda::loadgen {
namespace {

// Panel geometry in SVG user units.
constexpr double kPanelWidth = 520, kPanelHeight = 340;
constexpr double kMarginLeft = 70, kMarginRight = 90, kMarginTop = 40, kMarginBottom = 50;  // legend on the right
constexpr double kHeadingLineHeight = 20;
constexpr int kTargetTicks = 5;
constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                    "#9467bd", "#8c564b", "#e377c2", "#17becf"};

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string tick_label(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", std::abs(v) < 1e-12 ? 0.0 : v);
  return buf;
}

// An axis range widened to multiples of a 1/2/5 x 10^k step with about kTargetTicks intervals.
struct Axis {
  double lo, hi, step;

  static Axis nice(double lo, double hi) {
    if (!(hi > lo)) {  // one value (or none): show a unit-wide range around it
      const double pad = lo == 0 ? 1.0 : std::abs(lo) * 0.1;
      lo -= pad;
      hi += pad;
    }
    const double raw = (hi - lo) / kTargetTicks;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double f = raw / mag;
    const double step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
    return {std::floor(lo / step) * step, std::ceil(hi / step) * step, step};
  }

  std::vector<double> ticks() const {
    std::vector<double> t;
    const long n = std::lround((hi - lo) / step);
    for (long k = 0; k <= n; ++k) t.push_back(lo + static_cast<double>(k) * step);
    return t;
  }
};

void render_panel(const LineChart& chart, double ox, double oy, std::string& svg) {
  const double left = ox + kMarginLeft, right = ox + kPanelWidth - kMarginRight;
  const double top = oy + kMarginTop, bottom = oy + kPanelHeight - kMarginBottom;
  double x_min = std::numeric_limits<double>::infinity(), x_max = -x_min, y_max = 0;
  for (const auto& c : chart.curves)
    for (const auto& p : c.points) {
      x_min = std::min(x_min, p.x);
      x_max = std::max(x_max, p.x);
      y_max = std::max(y_max, p.y);
    }
  if (!std::isfinite(x_min)) x_min = x_max = 0;
  const Axis xa = Axis::nice(x_min, x_max), ya = Axis::nice(0, y_max);
  auto px = [&](double x) { return left + (x - xa.lo) / (xa.hi - xa.lo) * (right - left); };
  auto py = [&](double y) { return bottom - (y - ya.lo) / (ya.hi - ya.lo) * (bottom - top); };

  svg += "<g>\n<text x=\"" + num((left + right) / 2) + "\" y=\"" + num(oy + 24) +
         "\" text-anchor=\"middle\" font-weight=\"bold\">" + escape(chart.title) + "</text>\n";
  // Grid lines and tick labels.
  for (double t : xa.ticks()) {
    svg += "<line x1=\"" + num(px(t)) + "\" y1=\"" + num(top) + "\" x2=\"" + num(px(t)) + "\" y2=\"" + num(bottom) +
           "\" stroke=\"#e0e0e0\"/>\n";
    svg += "<text x=\"" + num(px(t)) + "\" y=\"" + num(bottom + 16) + "\" text-anchor=\"middle\">" + tick_label(t) +
           "</text>\n";
  }
  for (double t : ya.ticks()) {
    svg += "<line x1=\"" + num(left) + "\" y1=\"" + num(py(t)) + "\" x2=\"" + num(right) + "\" y2=\"" + num(py(t)) +
           "\" stroke=\"#e0e0e0\"/>\n";
    svg += "<text x=\"" + num(left - 6) + "\" y=\"" + num(py(t) + 4) + "\" text-anchor=\"end\">" + tick_label(t) +
           "</text>\n";
  }
  svg += "<rect x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" + num(right - left) + "\" height=\"" +
         num(bottom - top) + "\" fill=\"none\" stroke=\"#444\"/>\n";
  svg += "<text x=\"" + num((left + right) / 2) + "\" y=\"" + num(bottom + 38) + "\" text-anchor=\"middle\">" +
         escape(chart.x_label) + "</text>\n";
  svg += "<text transform=\"translate(" + num(ox + 18) + " " + num((top + bottom) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + escape(chart.y_label) + "</text>\n";
  // Curves; a legend to the right of the plot when there is more than one.
  for (size_t i = 0; i < chart.curves.size(); ++i) {
    const Curve& c = chart.curves[i];
    const std::string color = kPalette[i % std::size(kPalette)];
    if (!c.points.empty()) {
      svg += "<polyline fill=\"none\" stroke=\"" + color + "\" stroke-width=\"1.8\" points=\"";
      for (const auto& p : c.points) svg += num(px(p.x)) + "," + num(py(p.y)) + " ";
      svg += "\"/>\n";
      if (c.markers)
        for (const auto& p : c.points)
          svg += "<circle cx=\"" + num(px(p.x)) + "\" cy=\"" + num(py(p.y)) + "\" r=\"3\" fill=\"" + color + "\"/>\n";
    }
    if (chart.curves.size() < 2) continue;
    const double ly = top + 12 + 16 * static_cast<double>(i);
    svg += "<line x1=\"" + num(right + 8) + "\" y1=\"" + num(ly - 4) + "\" x2=\"" + num(right + 24) + "\" y2=\"" +
           num(ly - 4) + "\" stroke=\"" + color + "\" stroke-width=\"3\"/>\n";
    svg += "<text x=\"" + num(right + 28) + "\" y=\"" + num(ly) + "\">" + escape(c.label) + "</text>\n";
  }
  svg += "</g>\n";
}

}  // namespace

std::vector<PlotPoint> cdf_points(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  std::vector<PlotPoint> points;
  const double n = static_cast<double>(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    points.push_back({values[i], static_cast<double>(i) / n});
    points.push_back({values[i], static_cast<double>(i + 1) / n});
  }
  return points;
}

std::string render_svg(const std::vector<LineChart>& charts, const std::string& heading, int columns) {
  columns = std::clamp(columns, 1, std::max(1, static_cast<int>(charts.size())));
  const size_t rows = (charts.size() + columns - 1) / columns;
  std::vector<std::string> lines;
  for (size_t start = 0, end; start <= heading.size(); start = end + 1) {
    end = std::min(heading.find('\n', start), heading.size());
    lines.push_back(heading.substr(start, end - start));
  }
  const double heading_height = kHeadingLineHeight * static_cast<double>(lines.size()) + 12;
  const double width = kPanelWidth * columns, height = heading_height + kPanelHeight * static_cast<double>(rows);
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) + "\" height=\"" + num(height) +
                    "\" viewBox=\"0 0 " + num(width) + " " + num(height) +
                    "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  for (size_t i = 0; i < lines.size(); ++i)
    svg += "<text x=\"" + num(width / 2) + "\" y=\"" + num(kHeadingLineHeight * static_cast<double>(i + 1)) +
           "\" text-anchor=\"middle\" font-size=\"" + (i == 0 ? "15\" font-weight=\"bold" : "13") + "\">" +
           escape(lines[i]) + "</text>\n";
  for (size_t i = 0; i < charts.size(); ++i)
    render_panel(charts[i], kPanelWidth * static_cast<double>(i % columns),
                 heading_height + kPanelHeight * static_cast<double>(i / columns), svg);
  svg += "</svg>\n";
  return svg;
}

}  // namespace pagoda::loadgen
