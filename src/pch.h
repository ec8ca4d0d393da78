// The one precompiled header: the heavy LibTorch headers every translation unit would otherwise re-parse.
#pragma once
#include <torch/torch.h>
#include <nlohmann/json.hpp>
#include <filesystem>
#include <map>
#include <string>
#include <vector>
