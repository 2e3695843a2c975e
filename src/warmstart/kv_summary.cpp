#include "warmstart/kv_summary.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace pagoda::warmstart {

void rotate_head(const ModelHParams& hp, int64_t delta, float* head) {
  if (hp.spec->positions == PositionKind::kLearned || delta == 0) return;
  rope_apply(hp.rope, delta, 1, hp.head_dim, head);
}

namespace {

double dot(const float* a, const float* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

}  // namespace

Result<SlotCache> summarize_prefix(const ModelHParams& hp, const PromptState& state, const SummaryOptions& o) {
  const int64_t T = state.n_tokens;
  const int64_t P = T - 1;  // the prefix: every token before the last
  const int64_t m = o.m;
  if (m < 1) return make_error("warm start: the summary needs at least one slot");
  if (P < m)
    return make_error("warm start: a prompt of " + std::to_string(T) + " tokens is too short for " +
                      std::to_string(m) + " summary slots");
  const int64_t d = hp.head_dim, KVD = hp.kv_dim(), QD = hp.q_dim();
  const int64_t group = hp.n_head / hp.n_head_kv;
  const int64_t R = std::clamp<int64_t>(o.ref_positions, 1, T);
  const int64_t N = group * R;  // reference queries per KV head
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  SlotCache out = SlotCache::empty_for(hp, m);
  const int64_t W = out.row_width();

  std::vector<int64_t> seg_begin(m + 1);
  for (int64_t j = 0; j <= m; ++j) seg_begin[j] = j * P / m;

  std::vector<float> qbuf(static_cast<size_t>(N * d));        // [N, d] reference queries at position T-1
  std::vector<float> qwarm(static_cast<size_t>(N * d));       // [N, d] the same at position m
  Eigen::MatrixXd S(N, P);                                    // exact logits over the prefix
  Eigen::MatrixXd O(N, d);                                    // exact attention outputs over the prefix
  Eigen::MatrixXd L(N, m);                                    // log of each segment's absolute mass
  for (int64_t l = 0; l < hp.n_layer; ++l) {
    const float* K = state.k.data() + l * T * KVD;
    const float* V = state.v.data() + l * T * KVD;
    const float* Q = state.q.data() + l * T * QD;
    for (int64_t h = 0; h < hp.n_head_kv; ++h) {
      // Reference queries, moved to the last position.
      for (int64_t g = 0; g < group; ++g)
        for (int64_t r = 0; r < R; ++r) {
          const int64_t t = T - R + r, i = g * R + r;
          std::memcpy(&qbuf[i * d], Q + t * QD + (h * group + g) * d, sizeof(float) * d);
          rotate_head(hp, (T - 1) - t, &qbuf[i * d]);
          std::memcpy(&qwarm[i * d], &qbuf[i * d], sizeof(float) * d);
          rotate_head(hp, m - (T - 1), &qwarm[i * d]);
        }
      // Exact prefix attention of every reference query.
      std::vector<double> mass(P, 0.0);  // total softmax mass per key over the reference queries
      for (int64_t i = 0; i < N; ++i) {
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t t = 0; t < P; ++t) {
          S(i, t) = scale * dot(&qbuf[i * d], K + t * KVD + h * d, d);
          mx = std::max(mx, S(i, t));
        }
        double z = 0;
        for (int64_t t = 0; t < P; ++t) z += std::exp(S(i, t) - mx);
        O.row(i).setZero();
        for (int64_t t = 0; t < P; ++t) {
          const double a = std::exp(S(i, t) - mx) / z;
          mass[t] += a;
          for (int64_t c = 0; c < d; ++c) O(i, c) += a * V[t * KVD + h * d + c];
        }
        for (int64_t j = 0; j < m; ++j) {
          double sm = -std::numeric_limits<double>::infinity();
          for (int64_t t = seg_begin[j]; t < seg_begin[j + 1]; ++t) sm = std::max(sm, S(i, t));
          double zs = 0;
          for (int64_t t = seg_begin[j]; t < seg_begin[j + 1]; ++t) zs += std::exp(S(i, t) - sm);
          L(i, j) = sm + std::log(zs);
        }
      }
      float* rows = out.head_rows(l, h);
      Eigen::MatrixXd A(N, m);       // slot attention weights (softmax over the slots)
      Eigen::MatrixXd Vbar(m, d);    // mass-weighted segment means
      for (int64_t j = 0; j < m; ++j) {
        float* row = rows + j * W;
        int64_t best = seg_begin[j];
        double seg_mass = 0;
        Vbar.row(j).setZero();
        for (int64_t t = seg_begin[j]; t < seg_begin[j + 1]; ++t) {
          if (mass[t] > mass[best]) best = t;
          seg_mass += mass[t];
          for (int64_t c = 0; c < d; ++c) Vbar(j, c) += mass[t] * V[t * KVD + h * d + c];
        }
        if (seg_mass > 0)
          Vbar.row(j) /= seg_mass;
        else
          for (int64_t c = 0; c < d; ++c) Vbar(j, c) = V[best * KVD + h * d + c];
        std::memcpy(row, K + best * KVD + h * d, sizeof(float) * d);
        rotate_head(hp, j - best, row);
        // Bias: mean over the references of (true log-mass - slot logit).
        double b = 0;
        for (int64_t i = 0; i < N; ++i) {
          const double s_hat = scale * dot(&qwarm[i * d], row, d);
          A(i, j) = s_hat;
          b += L(i, j) - s_hat;
        }
        row[2 * d] = static_cast<float>(b / N);
      }
      for (int64_t i = 0; i < N; ++i) {
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < m; ++j) {
          A(i, j) += rows[j * W + 2 * d];
          mx = std::max(mx, A(i, j));
        }
        double z = 0;
        for (int64_t j = 0; j < m; ++j) z += (A(i, j) = std::exp(A(i, j) - mx));
        A.row(i) /= z;
      }
      // Values: (A^T A + lambda I) V' = A^T O + lambda Vbar.
      Eigen::MatrixXd G = A.transpose() * A;
      const double lambda = o.value_ridge * std::max(G.trace() / m, 1e-12);
      G.diagonal().array() += lambda;
      const Eigen::MatrixXd Vs = G.ldlt().solve(A.transpose() * O + lambda * Vbar);
      for (int64_t j = 0; j < m; ++j)
        for (int64_t c = 0; c < d; ++c) rows[j * W + d + c] = static_cast<float>(Vs(j, c));
    }
  }
  return out;
}

SlotCache exact_prefix_slots(const ModelHParams& hp, const PromptState& state) {
  const int64_t P = state.n_tokens - 1, d = hp.head_dim, KVD = hp.kv_dim();
  SlotCache out = SlotCache::empty_for(hp, P);
  const int64_t W = out.row_width();
  for (int64_t l = 0; l < hp.n_layer; ++l)
    for (int64_t h = 0; h < hp.n_head_kv; ++h) {
      float* rows = out.head_rows(l, h);
      for (int64_t t = 0; t < P; ++t) {
        std::memcpy(rows + t * W, state.k.data() + (l * state.n_tokens + t) * KVD + h * d, sizeof(float) * d);
        std::memcpy(rows + t * W + d, state.v.data() + (l * state.n_tokens + t) * KVD + h * d, sizeof(float) * d);
        rows[t * W + 2 * d] = 0.0f;
      }
    }
  return out;
}

}  // namespace pagoda::warmstart
