#pragma once
namespace xpusim {
inline constexpr const char* kVersion = "0.1.0";
}
