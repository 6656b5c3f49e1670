// The one redaction (src/outputs/redaction.h) against its table of cases,
// tests/unit/redaction_cases.tsv, which the Python side reads too: every row
// of the table of shapes has a case, and each case gives `expected` exactly.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "outputs/metadata.h"
#include "outputs/redaction.h"

using namespace gdr;

namespace {
std::vector<std::vector<std::string>> read_tsv(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f) << path;
  std::vector<std::vector<std::string>> rows;
  std::string line;
  bool header = true;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (header) { header = false; continue; }
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, '\t');) cells.push_back(c);
    rows.push_back(cells);
  }
  return rows;
}
const std::string kSource = GDR_SOURCE_DIR;
}  // namespace

TEST(Redaction, EveryCaseGivesItsExpectedText) {
  int n = 0;
  for (auto& c : read_tsv(kSource + "/tests/unit/redaction_cases.tsv")) {
    ASSERT_EQ(c.size(), 3u);
    EXPECT_EQ(redact(c[1]), c[2]) << "row " << c[0] << ": " << c[1];
    EXPECT_EQ(value_looks_secret(c[1]), c[0] != "keep") << c[1];
    EXPECT_EQ(redact(c[2]), c[2]) << "redacting twice changes " << c[2];
    ++n;
  }
  EXPECT_GE(n, 50);
}

TEST(Redaction, EveryRowOfTheTableHasACase) {
  std::set<std::string> cased;
  for (auto& c : read_tsv(kSource + "/tests/unit/redaction_cases.tsv")) cased.insert(c[0]);
  int rows = 0;
  for (auto& r : read_tsv(kSource + "/results/gdranalysis/redaction_shapes.tsv")) {
    EXPECT_TRUE(cased.count(r[0])) << "row " << r[0] << " of redaction_shapes.tsv has no case";
    ++rows;
  }
  EXPECT_GE(rows, 40);
}

// A line over the bound is replaced whole, and a long one under it costs linear time.
TEST(Redaction, LongLinesAreBounded) {
  EXPECT_EQ(redact(std::string(kRedactMaxLine + 1, 'a')).rfind(kRedacted, 0), 0u);
  const std::string run(kRedactMaxLine, 'y');
  EXPECT_EQ(redact(run), run);
  const std::string two = "x=" + std::string(3000, 'y') + "\nGDR_TOKEN=z";
  EXPECT_EQ(redact(two), "x=" + std::string(3000, 'y') + "\nGDR_TOKEN=REDACTED");
}

// The command line as stored: a secret inside one word (a file name) and in a flag and its value.
TEST(Redaction, CommandLineWordsAndPairs) {
  std::vector<std::string> words = {"gdrbench", "run", "--output", "/runs/token=Zq9vT4mWx8Lp2Rk7/a b.h5",
                                    "--password", "hunter2", "--json", "x?sig=abc&se=1"};
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  const std::string cl = join_command_line(static_cast<int>(argv.size()), argv.data());
  EXPECT_EQ(cl, "gdrbench run --output '/runs/token=REDACTED b.h5' --password REDACTED --json 'x?sig=REDACTED&se=1'");
}
