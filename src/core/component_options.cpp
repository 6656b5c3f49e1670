#include "component_options.h"

namespace gdr {

std::vector<ComponentOptions>& component_options() {
  static std::vector<ComponentOptions> r;
  return r;
}

ComponentOptionsRegistrar::ComponentOptionsRegistrar(ComponentOptions o) {
  component_options().push_back(std::move(o));
}

}  // namespace gdr
