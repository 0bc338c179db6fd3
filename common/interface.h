// The base of every abstract interface (Collector, CounterSource, EnergySource, PresetCatalog):
// copies are deleted, so that an implementation, which owns handles, is never sliced or copied
// through its interface, and the destructor is virtual, so that an owner of the interface
// destroys the implementation.
#pragma once

namespace hwperf {

class Interface {
 public:
  virtual ~Interface() = default;
  Interface(const Interface&) = delete;
  Interface& operator=(const Interface&) = delete;

 protected:
  Interface() = default;
};

}  // namespace hwperf
