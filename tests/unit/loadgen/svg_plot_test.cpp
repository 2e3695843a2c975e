#include "loadgen/svg_plot.h"

#include <gtest/gtest.h>

namespace pagoda::loadgen {
namespace {

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

TEST(SvgPlot, CdfIsAStaircaseFromZeroToOne) {
  const auto points = cdf_points({30, 10, 20});
  ASSERT_EQ(points.size(), 6u);
  EXPECT_EQ(points.front().x, 10);
  EXPECT_EQ(points.front().y, 0);
  EXPECT_EQ(points[1].y, 1.0 / 3);
  EXPECT_EQ(points.back().x, 30);
  EXPECT_EQ(points.back().y, 1);
  EXPECT_TRUE(cdf_points({}).empty());
}

TEST(SvgPlot, OnePolylinePerCurveInAWellFormedDocument) {
  LineChart cdf{"TTFT <CDF>", "ms", "fraction", {}};
  cdf.curves.push_back({"c=1", cdf_points({1, 2, 3}), false});
  cdf.curves.push_back({"c=4", cdf_points({2, 4, 8}), false});
  cdf.curves.push_back({"c=8 (all failed)", {}, false});
  LineChart scaling{"Throughput", "concurrency", "tok/s", {{"tok/s", {{1, 100}, {4, 350}}, true}}};
  LineChart flat{"One point", "x", "y", {{"p", {{5, 5}}, true}}};  // a degenerate range still renders
  const std::string svg = render_svg({cdf, scaling, flat}, "bench & co");
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(count(svg, "<polyline"), 4u);  // the empty curve draws no line
  EXPECT_EQ(count(svg, "<circle"), 3u);
  EXPECT_EQ(count(svg, "<g>"), count(svg, "</g>"));
  EXPECT_NE(svg.find("TTFT &lt;CDF&gt;"), std::string::npos);
  EXPECT_NE(svg.find("bench &amp; co"), std::string::npos);
  EXPECT_NE(svg.find("c=8 (all failed)"), std::string::npos);  // still in the legend
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
}

}  // namespace
}  // namespace pagoda::loadgen
