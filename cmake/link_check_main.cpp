int main() { return 0; }  // cmake/SwiftLinkCheck.cmake links one area library into this
