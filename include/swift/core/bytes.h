// Byte counts as the logs write them.
#pragma once

#include <string>

namespace swift {

std::string format_bytes(double bytes);  // "1.5 GiB", "12.0 MiB"

}  // namespace swift
