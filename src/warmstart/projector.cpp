#include "warmstart/projector.h"

#include <Eigen/Dense>
#include <algorithm>

namespace pagoda::warmstart {

std::string to_string(ProjectorForm form) {
  switch (form) {
    case ProjectorForm::kIdentity: return "identity";
    case ProjectorForm::kShared: return "shared";
    case ProjectorForm::kBlockDiagonal: return "block-diagonal";
    case ProjectorForm::kSlotMixing: return "slot-mixing";
    case ProjectorForm::kTargetAware: return "target-aware";
  }
  return "?";
}

Result<ProjectorForm> parse_projector_form(const std::string& text) {
  if (text == "identity") return ProjectorForm::kIdentity;
  if (text == "shared") return ProjectorForm::kShared;
  if (text == "block-diagonal") return ProjectorForm::kBlockDiagonal;
  if (text == "slot-mixing") return ProjectorForm::kSlotMixing;
  if (text == "target-aware") return ProjectorForm::kTargetAware;
  return make_error("unknown projector form '" + text +
                    "' (expected shared, block-diagonal, slot-mixing, target-aware or identity)");
}

Projector::Projector(ProjectorForm form, int64_t n_layer, int64_t n_kv_heads, int64_t head_dim, int64_t m,
                     int64_t target_features, int64_t embedding_dim)
    : form_(form), n_layer_(n_layer), n_kv_heads_(n_kv_heads), head_dim_(head_dim), m_(m) {
  if (form == ProjectorForm::kTargetAware) {
    k_ = target_features;
    embd_ = embedding_dim;
    basis_.assign(static_cast<size_t>(k_ * embd_), 0.0f);
  }
  weights_.assign(static_cast<size_t>(param_count()), 0.0f);
}

int64_t Projector::params_per_head() const {
  const int64_t d = head_dim_;
  switch (form_) {
    case ProjectorForm::kIdentity: return 0;
    case ProjectorForm::kShared: return (2 * d + 2) * (2 * d + 1);
    case ProjectorForm::kBlockDiagonal: return 2 * (d + 1) * d + 2;
    case ProjectorForm::kSlotMixing: return m_ * m_;
    case ProjectorForm::kTargetAware: return (2 * d + 2 + k_) * (2 * d + 1);
  }
  return 0;
}

namespace {

// y[0..out) = [x[0..in), 1] * W, W row-major (in + 1) x out: row by row, so the inner loop is contiguous.
void affine(const float* W, const float* x, int64_t in, int64_t out, float* y) {
  for (int64_t c = 0; c < out; ++c) y[c] = W[in * out + c];
  for (int64_t r = 0; r < in; ++r) {
    const float xr = x[r];
    const float* row = W + r * out;
    for (int64_t c = 0; c < out; ++c) y[c] += xr * row[c];
  }
}

// Ridge toward identity for y = [x, 1] W over rows gathered by `rows(i, x, y)`: writes W row-major (in+1) x out.
// The identity part maps input column c to output column c for c < min(in, out).
template <typename Gather>
void fit_affine(int64_t n_rows, int64_t in, int64_t out, double gamma, Gather gather, float* W) {
  Eigen::MatrixXd X(n_rows, in + 1), Y(n_rows, out);
  std::vector<float> x(in), y(out);
  for (int64_t i = 0; i < n_rows; ++i) {
    gather(i, x.data(), y.data());
    for (int64_t c = 0; c < in; ++c) X(i, c) = x[c];
    X(i, in) = 1.0;
    for (int64_t c = 0; c < out; ++c) Y(i, c) = y[c];
  }
  Eigen::MatrixXd W0 = Eigen::MatrixXd::Zero(in + 1, out);
  for (int64_t c = 0; c < std::min(in, out); ++c) W0(c, c) = 1.0;
  Eigen::MatrixXd G = X.transpose() * X;
  const double g = gamma * std::max(G.trace() / (in + 1), 1e-12);
  G.diagonal().array() += g;
  const Eigen::MatrixXd Wd = W0 + G.ldlt().solve(X.transpose() * (Y - X * W0));
  for (int64_t r = 0; r <= in; ++r)
    for (int64_t c = 0; c < out; ++c) W[r * out + c] = static_cast<float>(Wd(r, c));
}

}  // namespace

Result<SlotCache> Projector::apply(const SlotCache& source, std::span<const float> target_delta) const {
  if (source.n_layer != n_layer_ || source.n_kv_heads != n_kv_heads_ || source.head_dim != head_dim_ ||
      source.n_slots != m_)
    return make_error("warm start: the summary's shape does not match the projector's");
  if (form_ == ProjectorForm::kIdentity) return source;
  SlotCache out = source;
  const int64_t d = head_dim_, Wd = source.row_width(), P = params_per_head();
  // kTargetAware: each slot row is extended by phi = B delta (the same k features for every slot).
  std::vector<float> extended;
  if (form_ == ProjectorForm::kTargetAware) {
    if (static_cast<int64_t>(target_delta.size()) != embd_)
      return make_error("warm start: the target-aware projector needs the prompts' embedding difference (" +
                        std::to_string(embd_) + " values, got " + std::to_string(target_delta.size()) + ")");
    extended.assign(static_cast<size_t>(Wd + k_), 0.0f);
    for (int64_t f = 0; f < k_; ++f) {
      double acc = 0;
      for (int64_t c = 0; c < embd_; ++c) acc += double(basis_[f * embd_ + c]) * target_delta[c];
      extended[Wd + f] = static_cast<float>(acc);
    }
  }
  for (int64_t l = 0; l < n_layer_; ++l)
    for (int64_t h = 0; h < n_kv_heads_; ++h) {
      const float* w = weights_.data() + (l * n_kv_heads_ + h) * P;
      const float* src = source.head_rows(l, h);
      float* dst = out.head_rows(l, h);
      if (form_ == ProjectorForm::kSlotMixing) {
        // dst[j] = sum_k M[j][k] src[k]
        for (int64_t j = 0; j < m_; ++j) {
          float* y = dst + j * Wd;
          std::fill(y, y + Wd, 0.0f);
          for (int64_t k = 0; k < m_; ++k) {
            const float mjk = w[j * m_ + k];
            const float* x = src + k * Wd;
            for (int64_t c = 0; c < Wd; ++c) y[c] += mjk * x[c];
          }
        }
        continue;
      }
      for (int64_t j = 0; j < m_; ++j) {
        const float* x = src + j * Wd;
        float* y = dst + j * Wd;
        if (form_ == ProjectorForm::kShared) {
          affine(w, x, Wd, Wd, y);
        } else if (form_ == ProjectorForm::kTargetAware) {
          std::copy_n(x, Wd, extended.data());
          affine(w, extended.data(), Wd + k_, Wd, y);
        } else {
          affine(w, x, d, d, y);
          affine(w + (d + 1) * d, x + d, d, d, y + d);
          y[2 * d] = w[2 * (d + 1) * d] * x[2 * d] + w[2 * (d + 1) * d + 1];
        }
      }
    }
  return out;
}

Result<Projector> fit_projector(ProjectorForm form, const std::vector<std::pair<const SlotCache*, const SlotCache*>>& pairs,
                                double gamma, const std::vector<std::vector<float>>& target_deltas,
                                int64_t target_features) {
  if (pairs.empty()) return make_error("warm start: no pairs to fit the projector on");
  const SlotCache& first = *pairs.front().first;
  for (const auto& [s, t] : pairs)
    if (!s->same_shape(first) || !t->same_shape(first))
      return make_error("warm start: the pairs' summaries differ in shape");
  int64_t k = 0, embd = 0;
  std::vector<std::vector<float>> phi;  // [pairs][k]: each pair's features
  Eigen::MatrixXd basis;
  if (form == ProjectorForm::kTargetAware) {
    if (target_deltas.size() != pairs.size() || target_deltas.front().empty())
      return make_error("warm start: the target-aware projector needs one embedding difference per pair");
    embd = static_cast<int64_t>(target_deltas.front().size());
    for (const auto& t : target_deltas)
      if (static_cast<int64_t>(t.size()) != embd) return make_error("warm start: embedding differences differ in width");
    k = std::clamp<int64_t>(target_features, 1, std::min<int64_t>(embd, static_cast<int64_t>(pairs.size())));
    // B: the top k right singular vectors of the differences (rows: pairs), i.e. their principal directions.
    Eigen::MatrixXd D(static_cast<Eigen::Index>(pairs.size()), embd);
    for (size_t i = 0; i < pairs.size(); ++i)
      for (int64_t c = 0; c < embd; ++c) D(static_cast<Eigen::Index>(i), c) = target_deltas[i][c];
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(D, Eigen::ComputeThinV);
    basis = svd.matrixV().leftCols(k).transpose();  // k x embd
    // Features of RMS 1 over the training pairs, so the ridge (scaled by the inputs' trace) treats them like the
    // slot coordinates instead of shrinking them for being small.
    for (int64_t r = 0; r < k; ++r) {
      const double rms = (D * basis.row(r).transpose()).norm() / std::sqrt(static_cast<double>(pairs.size()));
      if (rms > 1e-12) basis.row(r) /= rms;
    }
    for (size_t i = 0; i < pairs.size(); ++i) {
      std::vector<float> f(k);
      for (int64_t r = 0; r < k; ++r) f[r] = static_cast<float>(basis.row(r).dot(D.row(static_cast<Eigen::Index>(i))));
      phi.push_back(std::move(f));
    }
  }
  Projector p(form, first.n_layer, first.n_kv_heads, first.head_dim, first.n_slots, k, embd);
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < embd; ++c) p.target_basis()[r * embd + c] = static_cast<float>(basis(r, c));
  if (form == ProjectorForm::kIdentity) return p;
  const int64_t d = first.head_dim, Wd = first.row_width(), m = first.n_slots, P = p.params_per_head();
  const int64_t n_rows = static_cast<int64_t>(pairs.size()) * m;
  for (int64_t l = 0; l < first.n_layer; ++l)
    for (int64_t h = 0; h < first.n_kv_heads; ++h) {
      float* w = p.weights().data() + (l * first.n_kv_heads + h) * P;
      // Row i: slot i % m of pair i / m.
      auto rows = [&](int64_t i, int64_t offset, int64_t width, float* x, float* y) {
        const auto& pr = pairs[i / m];
        std::copy_n(pr.first->head_rows(l, h) + (i % m) * Wd + offset, width, x);
        std::copy_n(pr.second->head_rows(l, h) + (i % m) * Wd + offset, width, y);
      };
      if (form == ProjectorForm::kSlotMixing) {
        // M = (sum Y X^T + g I)(sum X X^T + g I)^-1, so M = I when g dominates.
        Eigen::MatrixXd XX = Eigen::MatrixXd::Zero(m, m), YX = Eigen::MatrixXd::Zero(m, m);
        for (const auto& [src, dst] : pairs) {
          Eigen::MatrixXd X(m, Wd), Y(m, Wd);
          for (int64_t j = 0; j < m; ++j)
            for (int64_t c = 0; c < Wd; ++c) {
              X(j, c) = src->head_rows(l, h)[j * Wd + c];
              Y(j, c) = dst->head_rows(l, h)[j * Wd + c];
            }
          XX += X * X.transpose();
          YX += Y * X.transpose();
        }
        const double g = gamma * std::max(XX.trace() / m, 1e-12);
        XX.diagonal().array() += g;
        YX.diagonal().array() += g;
        // M XX = YX  <=>  XX^T M^T = YX^T (XX symmetric)
        const Eigen::MatrixXd M = XX.ldlt().solve(YX.transpose()).transpose();
        for (int64_t j = 0; j < m; ++j)
          for (int64_t k = 0; k < m; ++k) w[j * m + k] = static_cast<float>(M(j, k));
      } else if (form == ProjectorForm::kTargetAware) {
        fit_affine(n_rows, Wd + k, Wd, gamma,
                   [&](int64_t i, float* x, float* y) {
                     rows(i, 0, Wd, x, y);
                     std::copy_n(phi[i / m].data(), k, x + Wd);
                   },
                   w);
      } else if (form == ProjectorForm::kShared) {
        fit_affine(n_rows, Wd, Wd, gamma, [&](int64_t i, float* x, float* y) { rows(i, 0, Wd, x, y); }, w);
      } else {
        fit_affine(n_rows, d, d, gamma, [&](int64_t i, float* x, float* y) { rows(i, 0, d, x, y); }, w);
        fit_affine(n_rows, d, d, gamma, [&](int64_t i, float* x, float* y) { rows(i, d, d, x, y); },
                   w + (d + 1) * d);
        fit_affine(n_rows, 1, 1, gamma, [&](int64_t i, float* x, float* y) { rows(i, 2 * d, 1, x, y); },
                   w + 2 * (d + 1) * d);
      }
    }
  return p;
}

}  // namespace pagoda::warmstart
