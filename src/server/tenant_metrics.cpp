#include "server/tenant_metrics.h"

#include "server/metrics.h"

#include <functional>

namespace pagoda {

namespace {

struct Series {
  std::string tenant;
  int64_t waiting = 0, running = 0, kv_blocks = 0, refused_waiting = 0, refused_rpm = 0;
  int64_t max_waiting = 0, max_running = 0, max_kv_blocks = 0, rpm = 0;
};

}  // namespace

std::string render_tenant_metrics(const std::vector<TenantLedger::Row>& rows, const TenantRateLimiter& rate,
                                  const std::string& model_name) {
  if (rows.empty()) return {};
  std::vector<Series> series;
  for (const TenantLedger::Row& r : rows) {
    if (series.size() == kMaxTenantSeries) series.push_back(Series{"_other"});
    Series& s = series.size() > kMaxTenantSeries ? series.back() : series.emplace_back(Series{r.tenant});
    s.waiting += r.waiting;
    s.running += r.running;
    s.kv_blocks += r.kv_blocks;
    s.refused_waiting += r.refused_waiting;
    s.refused_rpm += rate.refused(r.tenant);
    s.max_waiting += r.limits.max_waiting;
    s.max_running += r.limits.max_running;
    s.max_kv_blocks += r.limits.max_kv_blocks;
    s.rpm += r.limits.requests_per_minute;
  }
  std::string text;
  const std::string model = "model_name=\"" + prometheus_label_value(model_name) + "\"";
  auto family = [&](const char* name, const char* type, const char* help,
                    const std::function<void(const Series&, const std::string& labels)>& each) {
    text += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    for (const Series& s : series) each(s, model + ",tenant=\"" + prometheus_label_value(s.tenant) + "\"");
  };
  auto gauge = [&](const char* name, const char* help, int64_t Series::*field) {
    family(name, "gauge", help, [&](const Series& s, const std::string& labels) {
      text += std::string(name) + "{" + labels + "} " + std::to_string(s.*field) + "\n";
    });
  };
  gauge("pagoda:tenant_requests_waiting", "Requests of the tenant submitted and not admitted yet.", &Series::waiting);
  gauge("pagoda:tenant_sequences_running", "Sequences of the tenant running (holding KV blocks).", &Series::running);
  gauge("pagoda:tenant_kv_blocks", "KV blocks the tenant's running sequences hold (shared blocks count per holder).",
        &Series::kv_blocks);
  gauge("pagoda:tenant_limit_max_waiting", "The tenant's max_waiting (0: none).", &Series::max_waiting);
  gauge("pagoda:tenant_limit_max_running", "The tenant's max_running (0: none).", &Series::max_running);
  gauge("pagoda:tenant_limit_max_kv_blocks", "The tenant's max_kv_blocks, kv_share in blocks (0: none).",
        &Series::max_kv_blocks);
  gauge("pagoda:tenant_limit_rpm", "The tenant's requests per minute (0: none).", &Series::rpm);
  family("pagoda:tenant_requests_refused_total", "counter",
         "Requests of the tenant answered 429: max_waiting requests were waiting, or rpm was reached.",
         [&](const Series& s, const std::string& labels) {
           text += "pagoda:tenant_requests_refused_total{" + labels + ",reason=\"max_waiting\"} " +
                   std::to_string(s.refused_waiting) + "\n";
           text += "pagoda:tenant_requests_refused_total{" + labels + ",reason=\"rpm\"} " +
                   std::to_string(s.refused_rpm) + "\n";
         });
  return text;
}

}  // namespace pagoda
