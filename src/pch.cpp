// The translation unit that builds the one precompiled header (src/pch.h) the LibTorch areas share.
