// Message sizes as users write them ("8", "64K", "1G"; powers of 1024).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace gdr {

// Throws UsageError naming `option` and the bad text.
std::size_t parse_size(std::string_view text, std::string_view option);
// min, min*f, min*f^2, ... up to and including max. Validates the three.
std::vector<std::size_t> size_sweep(std::size_t min, std::size_t max, double factor);
// "64 MiB", "8 B": for messages to people.
std::string human_bytes(std::size_t bytes);
// "22.6 GiB": one decimal, for amounts that are not round (free memory).
std::string approx_bytes(std::size_t bytes);

}  // namespace gdr
