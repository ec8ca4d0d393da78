// Request parsing of the OpenAI routes: accepted shapes, defaults, and a 400 naming the field for each bad value.
#include <gtest/gtest.h>

#include "swift/serve/openai_protocol.h"

using namespace swift::serve;

namespace {

// The ApiError a body raises (status 0 when it parses).
ApiError error_of(const std::string& body, bool chat = true) {
  try {
    if (chat) parse_chat_request(body, {});
    else parse_completion_request(body, {});
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "no error");
}

}  // namespace

TEST(OpenAIProtocol, ParsesAChatRequest) {
  auto r = parse_chat_request(R"({"model": "m", "messages": [{"role": "system", "content": "s"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
      "max_tokens": 5, "temperature": 0.5, "top_p": 0.9, "top_k": -1, "min_p": 0.1, "repetition_penalty": 1.2,
      "stop": "x", "n": 2, "seed": 3, "stream": true, "stream_options": {"include_usage": true},
      "logprobs": true, "top_logprobs": 2, "chat_template_kwargs": {"enable_thinking": false}, "return_details": true})",
                              {});
  EXPECT_EQ(r.model, "m");
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[1].content, "ab");
  EXPECT_EQ(*r.sampling.max_tokens, 5);
  EXPECT_EQ(*r.sampling.top_k, 0);  // -1 means off, as vLLM
  EXPECT_EQ(r.sampling.stop, std::vector<std::string>{"x"});
  EXPECT_EQ(r.sampling.n, 2);
  EXPECT_TRUE(r.sampling.stream && r.sampling.include_usage && r.sampling.return_details);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 2);
  EXPECT_EQ(r.enable_thinking, std::optional<bool>(false));
}

TEST(OpenAIProtocol, ParsesEveryPromptShape) {
  EXPECT_EQ(*parse_completion_request(R"({"prompt": "hi"})", {}).prompts.at(0).text, "hi");
  EXPECT_EQ(parse_completion_request(R"({"prompt": ["a", "b"]})", {}).prompts.size(), 2u);
  auto ids = parse_completion_request(R"({"prompt": [1, 2, 3]})", {});
  ASSERT_EQ(ids.prompts.size(), 1u);
  EXPECT_EQ(ids.prompts[0].token_ids, (std::vector<int64_t>{1, 2, 3}));
  auto lists = parse_completion_request(R"({"prompt": [[1], [2, 3]], "logprobs": 3, "echo": true})", {});
  ASSERT_EQ(lists.prompts.size(), 2u);
  EXPECT_EQ(lists.prompts[1].token_ids, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(*lists.logprobs, 3);
  EXPECT_TRUE(lists.echo);
  EXPECT_FALSE(parse_completion_request(R"({"prompt": "x"})", {}).model.size());
}

TEST(OpenAIProtocol, RefusesBadRequestsNamingTheField) {
  struct Case {
    const char* body;
    bool chat;
    const char* param;
  };
  const Case cases[] = {
      {"{nope", true, ""},
      {"[1]", true, ""},
      {R"({})", true, "messages"},
      {R"({"messages": []})", true, "messages"},
      {R"({"messages": [{"role": "robot", "content": "x"}]})", true, "messages[0].role"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", true, "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": -0.1})", true, "temperature"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})", true, "temperature"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_p": 0})", true, "top_p"},
      {R"({"messages": [{"role": "user", "content": "x"}], "min_p": 2})", true, "min_p"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_k": -2})", true, "top_k"},
      {R"({"messages": [{"role": "user", "content": "x"}], "repetition_penalty": 0})", true, "repetition_penalty"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0})", true, "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "n": 0})", true, "n"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21})", true, "top_logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", true, "top_logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": ["a", 1]})", true, "stop"},
      {R"({"messages": [{"role": "user", "content": "x"}], "model": 5})", true, "model"},
      {R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": {"enable_thinking": 1}})", true,
       "chat_template_kwargs.enable_thinking"},
      {R"({"messages": [{"role": "user", "content": "x"}], "continue_final_message": true})", true,
       "continue_final_message"},
      {R"({"messages": [{"role": "assistant", "content": "x"}], "continue_final_message": true,
           "add_generation_prompt": true})", true, "continue_final_message"},
      {R"({"messages": [{"role": "user", "content": "x"}], "add_generation_prompt": "yes"})", true,
       "add_generation_prompt"},
      {R"({})", false, "prompt"},
      {R"({"prompt": []})", false, "prompt"},
      {R"({"prompt": [[]]})", false, "prompt"},
      {R"({"prompt": [1, "a"]})", false, "prompt"},
      {R"({"prompt": ""})", false, "prompt"},
      {R"({"prompt": "x", "logprobs": 21})", false, "logprobs"},
      {R"({"prompt": "x", "prompt_logprobs": -2})", false, "prompt_logprobs"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.body);
    const auto e = error_of(c.body, c.chat);
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, c.param);
    EXPECT_EQ(e.type, "invalid_request_error");
  }
  // Stop strings are checked against every generated token: their number and length are bounded.
  std::string many = R"({"prompt": "x", "stop": [)";
  for (int i = 0; i < 17; ++i) many += std::string(i ? "," : "") + "\"s" + std::to_string(i) + "\"";
  many += "]}";
  EXPECT_EQ(error_of(many, false).param, "stop");
  const std::string long_stop = R"({"prompt": "x", "stop": ")" + std::string(513, 'a') + R"("})";
  EXPECT_EQ(error_of(long_stop, false).param, "stop");
}

// vLLM's add_generation_prompt / continue_final_message onto how the prompt ends; neither: ms-swift's choice.
TEST(OpenAIProtocol, HowThePromptEnds) {
  const std::string partial = R"("messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}])";
  auto end = [&](const std::string& extra) {
    return parse_chat_request("{" + partial + extra + "}", {}).prompt_end;
  };
  EXPECT_EQ(end(""), swift::templates::PromptEnd::kAuto);
  EXPECT_EQ(end(R"(, "continue_final_message": true, "add_generation_prompt": false)"), swift::templates::PromptEnd::kContinue);
  EXPECT_EQ(end(R"(, "continue_final_message": true)"), swift::templates::PromptEnd::kContinue);
  EXPECT_EQ(end(R"(, "add_generation_prompt": true)"), swift::templates::PromptEnd::kGenerationPrompt);
  EXPECT_EQ(end(R"(, "add_generation_prompt": false)"), swift::templates::PromptEnd::kNone);
  EXPECT_EQ(end(R"(, "continue_final_message": false)"), swift::templates::PromptEnd::kAuto);
}

TEST(OpenAIProtocol, ErrorJsonHasOpenAIsShape) {
  auto j = error_json("bad", "invalid_request_error", "top_p", "invalid_value");
  EXPECT_EQ(j["error"]["message"], "bad");
  EXPECT_EQ(j["error"]["param"], "top_p");
  EXPECT_TRUE(error_json("x", "server_error")["error"]["param"].is_null());
  EXPECT_TRUE(error_json("x", "server_error")["error"]["code"].is_null());
}
