// The environment filter (src/outputs/redaction.h) both ways: what a reviewer would
// call a secret is dropped, what steers the libraries is kept.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "outputs/metadata.h"
#include "outputs/redaction.h"

using namespace gdr;

namespace {
struct Row {
  const char* name;
  const char* value;
  bool secret;
};

// Names and values that any reviewer would call secrets (found by the name,
// the value, or both) and ordinary settings that must stay.
const Row kRows[] = {
    // Parameters and flags inside longer values (issue: stored before).
    {"UCX_OPTS", "--mca foo --password hunter2", true},
    {"UCX_OPTS", "--token=abc123", true},
    {"NCCL_URL", "https://host/x?a=1&api_token=abcdefgh", true},
    {"GDR_DB", "host=db;user=me;pwd=s3cr3t", true},
    {"UCX_TOOL", "mysqldump --user=me --password=s3cr3t db", true},
    {"UCX_NET_DEVICES", "mlx5_0:1,mlx5_1:1", false},
    {"OMPI_MCA_btl", "^openib,uct", false},
    // Names that say "credential", with harmless-looking values.
    {"SLURM_AUTH_TOKEN", "abc", true},
    {"UCX_PASSWORD", "x", true},
    {"NCCL_SECRET_KEY", "y", true},
    {"GDR_API_KEY", "123", true},
    {"GDR_APIKEY", "123", true},
    {"OMPI_MCA_orte_precondition_transports", "0123456789abcdef-fedcba9876543210", true},
    {"OMPI_MCA_orte_precondition_transports", "short", true},
    {"PMIX_SERVER_CERT", "/etc/pmix/cert.pem", true},
    {"SLURM_MUNGE_SOCKET", "/run/munge/munge.socket.2", true},
    {"GDR_DB_PASS", "hunter2", true},
    {"GDR_DBPASSWORD", "hunter2", true},
    {"CUDA_USERPWD", "hunter2", true},
    {"UCX_PASSPHRASE", "open sesame", true},
    {"SLURM_CREDENTIALS", "c", true},
    {"NCCL_COOKIE", "c", true},
    {"GDR_PRIVATE_KEY_FILE", "/root/.ssh/id_ed25519", true},
    {"PMIX_AUTHORIZATION", "yes", true},
    {"GDR_HMAC", "x", true},
    {"GDR_SALT", "x", true},
    {"GDR_ACCESS_TOKEN", "x", true},
    {"gdr_bearer", "x", true},
    // Values that are credentials under harmless names.
    {"GDR_REPO", "https://alice:s3cr3t@git.example.com/repo.git", true},
    {"SLURM_PROXY", "http://bob:pw@proxy:3128", true},
    {"UCX_SOCKADDR", "bob:hunter2@10.0.0.1", true},
    {"NCCL_HEADER", "Bearer abcdefghijklmnop", true},
    {"GDR_NOTE", "-----BEGIN OPENSSH PRIVATE KEY-----", true},
    {"GDR_GH", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", true},
    {"GDR_GH2", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop", true},
    {"GDR_GL", "glpat-abcdefghij0123456789", true},
    {"GDR_SLACK", "xoxb-1234567890-abcdefghij", true},
    {"GDR_AWS", "AKIAIOSFODNN7EXAMPLE", true},
    {"GDR_OPENAI", "sk-proj-abcdefghijklmnopqrstuvwxyz012345", true},
    {"GDR_HF", "hf_abcdefghijklmnopqrstuvwxyzABCD", true},
    {"GDR_JWT", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N", true},
    {"SLURM_JOB_COMMENT", "key=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", true},
    {"UCX_X", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", true},
    {"GDR_RANDOM", "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==", true},
    // Ordinary settings: kept.
    {"UCX_TLS", "rc,cuda_copy,cuda_ipc", false},
    {"UCX_NET_DEVICES", "mlx5_0:1,mlx5_1:1", false},
    {"UCX_RNDV_SCHEME", "put_zcopy", false},
    {"OMPI_COMM_WORLD_RANK", "0", false},
    {"OMPI_MCA_btl", "^openib", false},
    {"OMPI_MCA_pml", "ucx", false},
    {"OMPI_MCA_odls_base_sigkill_timeout", "3", false},
    {"OMPI_FILE_LOCATION", "/tmp/ompi.vm.0/pid.12345/1/0", false},
    {"OMPI_MCA_orte_top_session_dir", "/tmp/ompi.vm.0", false},
    {"NCCL_IB_HCA", "mlx5_0", false},
    {"NCCL_DEBUG", "INFO", false},
    {"NCCL_SOCKET_IFNAME", "eth0", false},
    {"CUDA_VISIBLE_DEVICES", "GPU-5c8d2a3e-1b2f-4c3d-8e9f-0a1b2c3d4e5f,GPU-0a1b2c3d-4e5f-6789-abcd-ef0123456789", false},
    {"CUDA_VISIBLE_DEVICES", "MIG-5c8d2a3e-1b2f-4c3d-8e9f-0a1b2c3d4e5f", false},
    {"CUDA_HOME", "/usr/local/cuda-13.0", false},
    {"SLURM_JOB_ID", "4242", false},
    {"SLURM_JOB_NAME", "allreduce_nightly_2026_h200_x8", false},
    {"SLURM_NODELIST", "gpu[001-016]", false},
    {"SLURM_SUBMIT_DIR", "/home/alice/gdrbench/results/archive", false},
    {"PMIX_NAMESPACE", "prterun-vm-12345@1", false},
    {"PMIX_SERVER_URI2", "prterun-vm-12345@0.0;tcp4://127.0.0.1:34567", false},
    {"GDR_STAGE_CHUNK", "4M", false},
    {"GDR_UCX_CUDA_MAX_SENDS", "32", false},
    {"UCX_IB_BYPASS", "n", false},
    {"SLURM_CPUS_ON_NODE", "16", false},
};
}  // namespace

TEST(Secrets, TableBothWays) {
  int secrets = 0, kept = 0;
  for (const Row& r : kRows) {
    bool got = looks_secret(r.name) || value_looks_secret(r.value);
    EXPECT_EQ(got, r.secret) << r.name << "=" << r.value;
    (r.secret ? secrets : kept)++;
  }
  EXPECT_GE(secrets, 30);
  EXPECT_GE(kept, 20);
}

TEST(Secrets, CapturedEnvironmentAppliesBoth) {
  std::vector<std::string> vars;
  for (const Row& r : kRows) vars.push_back(std::string(r.name) + "=" + r.value);
  std::vector<char*> envp;
  for (auto& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  for (auto& [k, v] : captured_environment(envp.data())) {
    EXPECT_FALSE(looks_secret(k)) << k;
    EXPECT_FALSE(value_looks_secret(v)) << k << "=" << v;
  }
}

// A long value costs linear time (a run of letters made the URL pattern
// quadratic: 600 variables of 1,500 bytes took 50 s), and a password after
// many "://" is still found.
TEST(Secrets, LongValuesAreBounded) {
  std::string run(2000, 'y');
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) EXPECT_FALSE(value_looks_secret(run));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // 10 s: linear takes 0.1 s optimized and ~3 s under -O0 and ASan; the
  // quadratic pattern would take ~30 s optimized.
  EXPECT_LT(s, 10.0) << "200 values of 2,000 letters took " << s << " s";
  std::string many;
  for (int i = 0; i < 20; ++i) many += "a://b ";
  EXPECT_TRUE(value_looks_secret(many + "a://u:p@h"));
}
