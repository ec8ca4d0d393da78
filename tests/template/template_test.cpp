// Chat templates against hand-written expectations: the text of every built-in template, which tokens carry
// loss under each rule, errors, stop words and how a template is chosen. (ms-swift's own output is checked in
// msswift_parity_test.cpp, the models' Jinja templates in jinja_parity_test.cpp.)
#include <gtest/gtest.h>

#include "swift/core/error.h"
#include "swift/template/select.h"
#include "swift/template/agent_template.h"
#include "swift/template/template.h"
#include "template_test_util.h"

namespace swift::templates {
namespace {

using test::real_tokenizer;

Message U(std::string c) { return {Role::kUser, std::move(c), std::nullopt, std::nullopt, {}}; }
Message S(std::string c) { return {Role::kSystem, std::move(c), std::nullopt, std::nullopt, {}}; }
Message T(std::string c) { return {Role::kTool, std::move(c), std::nullopt, std::nullopt, {}}; }
Message A(std::string c, std::optional<bool> loss = std::nullopt) {
  return {Role::kAssistant, std::move(c), loss, std::nullopt, {}};
}

Template make(const std::string& name, const std::string& tokenizer, TemplateOptions options = {}) {
  return Template(find_template_meta(name), real_tokenizer(tokenizer), std::move(options));
}

const Conversation kTwoRounds = {S("Be brief."), U("Hi"), A("Hello!"), U("2+2?"), A("4.")};
const Conversation kTwoRoundsNoSystem = {U("Hi"), A("Hello!"), U("2+2?"), A("4.")};

// ---- rendering ----------------------------------------------------------------------------------------------

TEST(TemplateRender, ChatmlFamily) {
  EXPECT_EQ(make("chatml", "qwen3").render({U("Hi")}),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(make("qwen", "qwen3").render({U("Hi")}),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(make("qwen2_5", "qwen3").render({U("Hi")}),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(make("qwen", "qwen3").render(kTwoRounds, /*add_generation_prompt=*/false),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n"
            "<|im_start|>assistant\n4.<|im_end|>\n");
}

TEST(TemplateRender, SystemPromptPrecedence) {
  // The data's system message beats --system, which beats the template's default; "" means none.
  TemplateOptions cli;
  cli.system = "You are a pirate.";
  EXPECT_EQ(make("qwen", "qwen3", cli).render({U("Hi")}, false),
            "<|im_start|>system\nYou are a pirate.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
  EXPECT_EQ(make("qwen", "qwen3", cli).render({S("Be brief."), U("Hi")}, false),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
  EXPECT_EQ(make("qwen", "qwen3").render({S(""), U("Hi")}, false), "<|im_start|>user\nHi<|im_end|>\n");
  EXPECT_EQ(make("qwen3", "qwen3", cli).render({U("Hi")}, false),
            "<|im_start|>system\nYou are a pirate.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
}

TEST(TemplateRender, Qwen3ThinkingSwitch) {
  Template t = make("qwen3", "qwen3");
  const Conversation history = {U("Hi"), A("<think>\nA greeting.\n</think>\n\nHello!"), U("2+2?")};
  const std::string shared =
      "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"
      "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n";
  EXPECT_EQ(t.render(history, true, true), shared);
  EXPECT_EQ(t.render(history, true, false), shared + "<think>\n\n</think>\n\n");
  // Unset follows ms-swift 4.x: hybrid templates default to non-thinking.
  EXPECT_FALSE(t.default_enable_thinking());
  EXPECT_EQ(t.render(history), shared + "<think>\n\n</think>\n\n");
  TemplateOptions on;
  on.enable_thinking = true;
  EXPECT_EQ(make("qwen3", "qwen3", on).render(history), shared);
  // Thinking-only and instruct-only variants.
  EXPECT_EQ(make("qwen3_thinking", "qwen3").render({U("Hi")}),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n");
  EXPECT_EQ(make("qwen3_nothinking", "qwen3").render({U("Hi")}),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(TemplateRender, Qwen3ReasoningContent) {
  Message reply = A("Hello!");
  reply.reasoning_content = "\nA greeting.\n";
  EXPECT_EQ(make("qwen3", "qwen3").render({U("Hi"), reply}, false),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\nA greeting.\n</think>\n\nHello!"
            "<|im_end|>\n");
  // Templates that do not think drop it.
  EXPECT_EQ(make("qwen", "qwen3").render({S(""), U("Hi"), reply}, false),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n");
}

TEST(TemplateRender, Llama3) {
  EXPECT_EQ(make("llama3", "llama3").render({U("Hi")}),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(make("llama3", "llama3").render(kTwoRounds, false),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\n2+2?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n4.<|eot_id|>");
  TemplateOptions dated;
  dated.date = "26 Jul 2024";
  EXPECT_EQ(make("llama3_2", "llama3", dated).render({U("Hi")}),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
            "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(make("llama3_2", "llama3", dated).render({S("Be brief."), U("Hi")}, false),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
            "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>");
  // Without a date, today's.
  EXPECT_NE(make("llama3_2", "llama3").render({U("Hi")}).find("Today Date: "), std::string::npos);
}

TEST(TemplateRender, Llama2AndMistral) {
  const std::string llama2_system = find_template_meta("llama").default_system.value();
  EXPECT_EQ(llama2_system.substr(0, 45), "You are a helpful, respectful and honest assi");
  EXPECT_EQ(make("llama", "mistral7b").render(kTwoRoundsNoSystem, true),
            "<s>[INST] <<SYS>>\n" + llama2_system + "\n<</SYS>>\n\nHi [/INST]Hello!</s><s>[INST] 2+2? [/INST]4.</s>");
  EXPECT_EQ(make("llama", "mistral7b").render({S(""), U("Hi")}), "<s>[INST] Hi [/INST]");
  EXPECT_EQ(make("mistral", "mistral7b").render(kTwoRoundsNoSystem, false),
            "<s>[INST] Hi [/INST]Hello!</s>[INST] 2+2? [/INST]4.</s>");
  EXPECT_EQ(make("mistral", "mistral7b").render({S("Be brief."), U("Hi")}), "<s>[INST] Be brief.\n\nHi [/INST]");
}

TEST(TemplateRender, DefaultTemplateUsesTheTokenizersBosAndEos) {
  // Mistral's post-processor adds <s>; the reply ends with the tokenizer's EOS, whatever it is.
  EXPECT_EQ(make("default", "mistral7b").render({U("Hi"), A("Hello!")}, false),
            "<s>You are a helpful assistant.\n\n### Human:\nHi\n\n### Assistant:\nHello!</s>");
  EXPECT_EQ(make("default", "qwen3").render({S(""), U("Hi"), A("Hello!"), U("More")}),
            "### Human:\nHi\n\n### Assistant:\nHello!\n\n### Human:\nMore\n\n### Assistant:\n");
  EXPECT_EQ(make("default", "qwen3").render({S(""), U("Hi"), A("Hello!")}, false),
            "### Human:\nHi\n\n### Assistant:\nHello!<|im_end|>");
}

TEST(TemplateRender, PlainTextWithoutChatTemplate) {
  Template plain(plain_text_template_meta(), real_tokenizer("mistral7b"));
  EXPECT_EQ(plain.render({S("ignored"), U("Once upon a time")}), "<s>Once upon a time");
  Template plain_qwen(plain_text_template_meta(), real_tokenizer("qwen3"));
  EXPECT_EQ(plain_qwen.render({U("a"), A("b"), U("Once")}), "Once");  // single round: the last one
  Encoded e = plain.encode({U("The sky is"), A(" blue.")});
  EXPECT_EQ(e.input_ids.front(), 1);
  EXPECT_EQ(e.input_ids.back(), 2);
  EXPECT_EQ(e.labels.back(), 2);
}

TEST(TemplateRender, ToolResults) {
  const Conversation c = {U("Weather?"), A("<tool_call>x</tool_call>"), T("{\"t\": 21}"), T("sunny")};
  EXPECT_EQ(make("qwen", "qwen3").render(c).substr(make("qwen", "qwen3").render(c).find("<|im_start|>user")),
            "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n<tool_call>x</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\n{\"t\": 21}\n</tool_response>\n<tool_response>\nsunny\n"
            "</tool_response><|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(make("llama3", "llama3").render(c),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nWeather?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n<tool_call>x</tool_call><|eot_id|>"
            "<|start_header_id|>tool<|end_header_id|>\n\n{\"t\": 21}<|eot_id|>"
            "<|start_header_id|>tool<|end_header_id|>\n\nsunny<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(make("mistral", "mistral7b").render(c),
            "<s>[INST] Weather? [/INST]<tool_call>x</tool_call></s>[INST] {\"t\": 21}\nsunny [/INST]");
}

TEST(TemplateRender, ConsecutiveMessagesAreJoined) {
  EXPECT_EQ(make("chatml", "qwen3").render({U("a "), U("b"), A("c"), A("d")}, false),
            "<|im_start|>user\na b<|im_end|>\n<|im_start|>assistant\ncd<|im_end|>\n");
  // A conversation that starts with a reply (pretraining text) gets an empty query.
  EXPECT_EQ(make("chatml", "qwen3").render({A("text")}, false),
            "<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\ntext<|im_end|>\n");
}

// ---- labels -------------------------------------------------------------------------------------------------

TemplateOptions rule(LossRule r) {
  TemplateOptions o;
  o.loss_rule = r;
  return o;
}

using Texts = std::vector<std::string>;

TEST(TemplateLabels, DefaultRuleMarksEveryReplyAndItsEndOfTurn) {
  const auto& tok = real_tokenizer("qwen3");
  EXPECT_EQ(test::loss_texts(make("qwen", "qwen3").encode(kTwoRounds), tok),
            (Texts{"Hello!<|im_end|>\n", "4.<|im_end|>\n"}));
  // qwen3 training opens each reply without thinking with the empty think block, which is learned too.
  EXPECT_EQ(test::loss_texts(make("qwen3", "qwen3").encode(kTwoRounds), tok),
            (Texts{"<think>\n\n</think>\n\nHello!<|im_end|>\n", "<think>\n\n</think>\n\n4.<|im_end|>\n"}));
  EXPECT_EQ(test::loss_texts(make("llama3", "llama3").encode(kTwoRounds), real_tokenizer("llama3")),
            (Texts{"Hello!<|eot_id|>", "4.<|eot_id|>"}));
}

TEST(TemplateLabels, LastRoundMarksOnlyTheLastReply) {
  const auto& tok = real_tokenizer("qwen3");
  EXPECT_EQ(test::loss_texts(make("qwen", "qwen3", rule(LossRule::kLastRound)).encode(kTwoRounds), tok),
            (Texts{"4.<|im_end|>\n"}));
  // ... and, like inference, drops the thinking of earlier replies.
  const Conversation thinking = {U("Hi"), A("<think>\ngreet\n</think>\n\nHello!"), U("2+2?"),
                                 A("<think>\nadd\n</think>\n\n4.")};
  Encoded e = make("qwen3", "qwen3", rule(LossRule::kLastRound)).encode(thinking);
  EXPECT_EQ(test::loss_texts(e, tok), (Texts{"<think>\nadd\n</think>\n\n4.<|im_end|>\n"}));
  EXPECT_EQ(e.text.find("greet"), std::string::npos);
  // The default rule keeps it.
  EXPECT_NE(make("qwen3", "qwen3").encode(thinking).text.find("greet"), std::string::npos);
  EXPECT_EQ(test::loss_texts(make("llama3", "llama3", rule(LossRule::kLastRound)).encode(kTwoRounds),
                             real_tokenizer("llama3")),
            (Texts{"4.<|eot_id|>"}));
}

TEST(TemplateLabels, AllMarksEveryTokenButTheFirst) {
  Encoded e = make("qwen", "qwen3", rule(LossRule::kAll)).encode(kTwoRounds);
  ASSERT_GT(e.labels.size(), 1u);
  EXPECT_EQ(e.labels[0], kIgnoreIndex);
  EXPECT_TRUE(std::equal(e.labels.begin() + 1, e.labels.end(), e.input_ids.begin() + 1));
}

TEST(TemplateLabels, PerMessageLossOverridesTheRule) {
  const auto& tok = real_tokenizer("qwen3");
  const Conversation c = {U("Hi"), A("Hello!", false), U("2+2?"), A("4.")};
  EXPECT_EQ(test::loss_texts(make("qwen", "qwen3").encode(c), tok), (Texts{"4.<|im_end|>\n"}));
  const Conversation first_on = {U("Hi"), A("Hello!", true), U("2+2?"), A("4.")};
  EXPECT_EQ(test::loss_texts(make("qwen", "qwen3", rule(LossRule::kLastRound)).encode(first_on), tok),
            (Texts{"Hello!<|im_end|>\n", "4.<|im_end|>\n"}));
  // Under `all`, a reply with loss false is the only text without loss.
  Encoded all = make("qwen", "qwen3", rule(LossRule::kAll)).encode(c);
  std::vector<int64_t> hello = tok.encode("Hello!");
  int64_t ignored = std::count(all.labels.begin() + 1, all.labels.end(), kIgnoreIndex);
  EXPECT_EQ(ignored, static_cast<int64_t>(hello.size()));
  // As in ms-swift, `loss: false` on the last reply leaves its end-of-turn text with loss.
  EXPECT_EQ(test::loss_texts(make("qwen", "qwen3").encode({U("Hi"), A("Hello!", false)}), tok),
            (Texts{"<|im_end|>\n"}));
  // Joined replies keep their own switches.
  EXPECT_EQ(test::loss_texts(make("qwen", "qwen3").encode({U("Hi"), A("Skip. ", false), A("Keep.", true)}), tok),
            (Texts{"Keep.<|im_end|>\n"}));
}

TEST(TemplateLabels, SentencePieceTemplatesLabelReplyTokensAndEos) {
  const auto& tok = real_tokenizer("mistral7b");
  auto with_eos = [&](const std::string& text) {
    std::vector<int64_t> ids = tok.encode(text);
    ids.push_back(*tok.eos_id());
    return ids;
  };
  using Spans = std::vector<std::vector<int64_t>>;
  EXPECT_EQ(test::loss_spans(make("llama", "mistral7b").encode(kTwoRounds)),
            (Spans{with_eos("Hello!"), with_eos("4.")}));
  EXPECT_EQ(test::loss_spans(make("mistral", "mistral7b").encode(kTwoRounds)),
            (Spans{with_eos("Hello!"), with_eos("4.")}));
  // The default template's separator is "\n\n", not its EOS suffix, so only the last reply learns EOS.
  EXPECT_EQ(test::loss_spans(make("default", "mistral7b").encode(kTwoRounds)),
            (Spans{tok.encode("Hello!"), with_eos("4.")}));
}

TEST(TemplateLabels, PiecewiseTokenizationCanDifferFromTheWholeText) {
  // Byte-level BPE with special tokens at every boundary: the same ids either way.
  Encoded q = make("qwen3", "qwen3").encode(kTwoRounds);
  EXPECT_EQ(q.input_ids, real_tokenizer("qwen3").encode(q.text));
  // SentencePiece: a reply tokenized on its own starts a word ("▁Hello"), unlike "[/INST]Hello" in one string.
  const auto& sp = real_tokenizer("mistral7b");
  Encoded m = make("mistral", "mistral7b").encode({U("Hi"), A("Hello!")});
  EXPECT_NE(m.input_ids, sp.encode(m.text));
  EXPECT_EQ(m.text, "<s>[INST] Hi [/INST]Hello!</s>");
}

TEST(TemplateEncode, PromptIdsForGeneration) {
  const auto& tok = real_tokenizer("qwen3");
  Template t = make("qwen3", "qwen3");
  const Conversation c = {U("Hi"), A("<think>\nx\n</think>\n\nHello!"), U("2+2?")};
  for (bool thinking : {true, false}) {
    std::vector<int64_t> ids = t.encode_prompt(c, thinking);
    EXPECT_EQ(tok.decode(ids), t.render(c, true, thinking));
  }
  EXPECT_EQ(t.encode_prompt({U("Hi")}, false),
            tok.encode("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"));
}

// A final assistant message: continued by default (ms-swift), or closed and followed by a new reply, or closed
// and left (vLLM's continue_final_message / add_generation_prompt).
TEST(TemplateEncode, FinalAssistantMessage) {
  const auto& tok = real_tokenizer("qwen3");
  Template t = make("qwen3", "qwen3");
  const Conversation c = {U("Count to three."), A("One, two,")};
  const std::string head = "<|im_start|>user\nCount to three.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
  EXPECT_EQ(tok.decode(t.encode_prompt(c)), head + "One, two,");
  EXPECT_EQ(t.encode_prompt(c), t.encode_prompt(c, std::nullopt, PromptEnd::kContinue));
  EXPECT_EQ(tok.decode(t.encode_prompt(c, false, PromptEnd::kGenerationPrompt)),
            head + "One, two,<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  EXPECT_EQ(tok.decode(t.encode_prompt(c, false, PromptEnd::kNone)), head + "One, two,<|im_end|>\n");
  EXPECT_EQ(tok.decode(t.encode_prompt({U("Hi")}, false, PromptEnd::kNone)), "<|im_start|>user\nHi<|im_end|>\n");
}

// ---- stop words -------------------------------------------------------------------------------------------

TEST(TemplateStop, WordsAndIds) {
  EXPECT_EQ(make("qwen3", "qwen3").stop_words(), (std::vector<std::string>{"<|endoftext|>", "<|im_end|>"}));
  EXPECT_EQ(make("qwen3", "qwen3").stop_token_ids(), (std::vector<int64_t>{151643, 151645}));
  EXPECT_EQ(make("llama3", "llama3").stop_words(), (std::vector<std::string>{"<|eot_id|>", "<|end_of_text|>"}));
  EXPECT_EQ(make("llama3", "llama3").stop_token_ids(), (std::vector<int64_t>{128009, 128001}));
  EXPECT_EQ(make("llama", "mistral7b").stop_token_ids(), (std::vector<int64_t>{2}));
  EXPECT_EQ(make("mistral", "mistral7b").stop_words(), (std::vector<std::string>{"</s>"}));
  EXPECT_EQ(make("default", "qwen3").stop_token_ids(), (std::vector<int64_t>{151645}));
}

TEST(TemplateStop, ReplyEndingInAStopWordGetsNoSecondSuffix) {
  Encoded e = make("qwen", "qwen3").encode({S(""), U("Hi"), A("Hello!<|im_end|>")});
  EXPECT_EQ(e.text, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>");
}

// ---- errors -------------------------------------------------------------------------------------------------

// GLM-4 (ms-swift's GLM4Template): a prompt left open ends at <|assistant|>, the model writes the newline, and the reply
// is handed back without it; a prompt continuing a reply keeps the newline before it. Other templates keep replies whole.
TEST(TemplateGlm4, OpenPromptEndsAtTheAssistantTokenAndRepliesLoseLeadingNewlines) {
  const Template glm = make("glm4", "glm4_style");
  EXPECT_EQ(glm.render({U("Hi")}), "[gMASK]<sop><|user|>\nHi<|assistant|>");
  EXPECT_EQ(glm.render({U("Hi"), A("Hel")}, /*add_generation_prompt=*/false), "[gMASK]<sop><|user|>\nHi<|assistant|>\nHel<|user|>");
  EXPECT_EQ(glm.reply_text("\n\nHello!\n"), "Hello!\n");
  EXPECT_EQ(glm.reply_text("\n"), "");
  EXPECT_EQ(make("qwen3", "qwen3").reply_text("\nHello!"), "\nHello!");
  // With --enable_thinking the prompt ends at <think>: the newline after it is the model's own.
  EXPECT_EQ(glm.reply_text("\nLet me think.", true), "\nLet me think.");
  TemplateOptions thinking;
  thinking.enable_thinking = true;
  EXPECT_EQ(make("glm4", "glm4_style", thinking).reply_text("\nHm."), "\nHm.");
  // Tool results in GLM-4's agent format (its own, as ms-swift's glm4 template): they open the next reply themselves.
  EXPECT_EQ(glm.agent_template(), AgentTemplate::kGlm4);
  EXPECT_EQ(glm.render({U("Weather?"), A("Calling."), T("{\"temp\": 21}"), T("{\"sky\": \"clear\"}")}),
            "[gMASK]<sop><|user|>\nWeather?<|assistant|>\nCalling.\n{\"temp\": 21}<|observation|>\n{\"sky\": \"clear\"}<|assistant|>");
}

TEST(TemplateErrors, UnknownTemplateListsTheAvailableOnes) {
  try {
    find_template_meta("qwen4");
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown chat template 'qwen4'"), std::string::npos);
    for (const auto& name : {"chatml", "deepseek", "deepseek_r1", "deepseek_v2_5", "default", "gemma", "gemma3_text",
                             "llama", "llama3", "llama3_2", "mistral", "qwen", "qwen2_5", "qwen3"}) {
      EXPECT_NE(e.hint().find(name), std::string::npos) << name;
    }
  }
  EXPECT_EQ(template_names().size(), 20u);
  EXPECT_TRUE(std::is_sorted(template_names().begin(), template_names().end()));
}

TEST(TemplateErrors, MissingSpecialTokensFailAtUseNotAtLoad) {
  // The Mistral tokenizer has no <|im_start|>: it loads and the template binds; rendering says what is missing.
  Template t = make("qwen3", "mistral7b");
  EXPECT_EQ(t.missing_token(), "<|im_start|>");
  auto expect_missing = [](auto&& fn, const std::string& token) {
    try {
      fn();
      FAIL() << "expected UsageError";
    } catch (const UsageError& e) {
      EXPECT_NE(e.message().find("has no " + token + " token"), std::string::npos) << e.message();
      EXPECT_NE(e.hint().find("--template"), std::string::npos);
      EXPECT_NE(e.hint().find("--use_chat_template false"), std::string::npos);
    }
  };
  expect_missing([&] { t.render({U("Hi")}); }, "<|im_start|>");
  expect_missing([&] { t.encode({U("Hi"), A("Hello")}); }, "<|im_start|>");
  expect_missing([&] { t.encode_prompt({U("Hi")}); }, "<|im_start|>");
  Template l3 = make("llama3", "qwen3");
  expect_missing([&] { l3.render({U("Hi")}); }, "<|begin_of_text|>");
  Template l2 = make("llama", "qwen3");
  expect_missing([&] { l2.render({U("Hi")}); }, "<s>");
  EXPECT_FALSE(make("qwen3", "qwen3").missing_token().has_value());
}

TEST(TemplateErrors, EosTemplateOnATokenizerWithoutEos) {
  auto tok = tokenizer::Tokenizer::from_json(
      R"({"version": "1.0", "added_tokens": [], "normalizer": null, "pre_tokenizer": null,
          "post_processor": null, "decoder": null,
          "model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []}})");
  Template t(find_template_meta("default"), *tok);
  EXPECT_THROW(t.render({U("a"), A("b")}), UsageError);
}

TEST(TemplateErrors, BadConversations) {
  Template t = make("qwen", "qwen3");
  EXPECT_THROW(t.render({U("Hi"), S("late system")}), DataError);
  EXPECT_THROW(t.render({U("Hi"), T("result")}), DataError);
  EXPECT_THROW(t.render({}), DataError);
  EXPECT_THROW(t.render({S("only a system prompt")}), DataError);
  EXPECT_THROW(t.encode_prompt({U("Hi")}, std::nullopt, PromptEnd::kContinue), DataError);
  EXPECT_THROW(parse_loss_rule("react"), UsageError);
  EXPECT_EQ(parse_loss_rule("last_round"), LossRule::kLastRound);
  EXPECT_EQ(loss_rule_name(LossRule::kAll), "all");
}

TEST(TemplateLabels, LossScaleNames) {
  for (const char* name : {"default", "last_round", "all", "default+ignore_empty_think", "last_round+ignore_empty_think",
                           "all+ignore_empty_think"}) {
    EXPECT_EQ(loss_scale_name(parse_loss_scale(name)), name);
  }
  EXPECT_EQ(loss_scale_name(parse_loss_scale("ignore_empty_think")), "default+ignore_empty_think");
  for (const char* bad : {"react", "default+react", "default+", "+ignore_empty_think", "hermes+ignore_empty_think"}) {
    EXPECT_THROW(parse_loss_scale(bad), UsageError) << bad;
  }
}

// ms-swift's "+ignore_empty_think" (which it adds by itself for qwen3): the empty think block opening a scored reply
// carries no loss; a reply that thinks keeps all of it. msswift_parity_test.cpp checks the ids against ms-swift's.
TEST(TemplateLabels, IgnoreEmptyThinkMasksOnlyTheEmptyBlock) {
  const auto& tok = real_tokenizer("qwen3");
  TemplateOptions o;
  o.ignore_empty_think = true;
  EXPECT_EQ(test::loss_texts(make("qwen3", "qwen3", o).encode(kTwoRounds), tok),
            (Texts{"Hello!<|im_end|>\n", "4.<|im_end|>\n"}));
  const Conversation thinking = {U("2+2?"), A("<think>\nadd\n</think>\n\n4.")};
  EXPECT_EQ(test::loss_texts(make("qwen3", "qwen3", o).encode(thinking), tok),
            (Texts{"<think>\nadd\n</think>\n\n4.<|im_end|>\n"}));
  // Written in the data (any whitespace inside), or a bare closing tag: masked alike.
  const Conversation written = {U("Hi"), A("<think> \n</think>\nHello!")};
  EXPECT_EQ(test::loss_texts(make("qwen3", "qwen3", o).encode(written), tok), (Texts{"Hello!<|im_end|>\n"}));
  const Conversation bare = {U("Hi"), A("</think>\n\nHello!")};
  EXPECT_EQ(test::loss_texts(make("chatml", "qwen3", o).encode(bare), tok), (Texts{"Hello!<|im_end|>\n"}));
  // Inference and rendering are untouched; the same ids come out, only the labels differ.
  TemplateOptions plain;
  EXPECT_EQ(make("qwen3", "qwen3", o).encode(kTwoRounds).input_ids,
            make("qwen3", "qwen3", plain).encode(kTwoRounds).input_ids);
}

// ---- messages as JSON -------------------------------------------------------------------------------------

TEST(TemplateMessages, FromJson) {
  auto j = nlohmann::json::parse(R"([
    {"role": "system", "content": "s"},
    {"role": "user", "content": "u"},
    {"role": "assistant", "content": "a", "loss": false, "reasoning_content": "r"},
    {"role": "tool_response", "content": {"temp": 21}},
    {"role": "assistant", "content": null, "loss": null}])");
  Conversation c = conversation_from_json(j);
  ASSERT_EQ(c.size(), 5u);
  EXPECT_EQ(c[0].role, Role::kSystem);
  EXPECT_EQ(c[2].loss, false);
  EXPECT_EQ(c[2].reasoning_content, "r");
  EXPECT_EQ(c[3].role, Role::kTool);
  EXPECT_EQ(c[3].content, "{\"temp\":21}");
  EXPECT_EQ(c[4].content, "");
  EXPECT_FALSE(c[4].loss.has_value());
  EXPECT_EQ(conversation_to_json(c)[2]["loss"], false);
  EXPECT_THROW(conversation_from_json(nlohmann::json::parse(R"([{"role": "robot", "content": "x"}])")), DataError);
  EXPECT_THROW(conversation_from_json(nlohmann::json::parse(R"([{"content": "x"}])")), DataError);
  EXPECT_THROW(conversation_from_json(nlohmann::json::parse(R"([{"role": "user", "content": [1]}])")), DataError);
  EXPECT_THROW(conversation_from_json(nlohmann::json::parse(R"({"role": "user"})")), DataError);
}

// ---- choosing a template ------------------------------------------------------------------------------------

TEST(TemplateSelect, FlagThenArgsJsonThenFamilyDefault) {
  test::TempDir ckpt, model;
  ckpt.write("args.json", R"({"model": "Qwen/Qwen3-0.6B", "template": "qwen3_nothinking", "system": null})");
  model.write("args.json", R"({"template": null})");
  EXPECT_EQ(choose_template("chatml", {ckpt.path()}, "qwen3").name, "chatml");
  EXPECT_EQ(choose_template("chatml", {ckpt.path()}, "qwen3").source, "--template");
  TemplateChoice from_ckpt = choose_template("", {model.path(), ckpt.path()}, "qwen3");
  EXPECT_EQ(from_ckpt.name, "qwen3_nothinking");
  EXPECT_EQ(from_ckpt.source, (ckpt.path() / "args.json").string());
  EXPECT_EQ(choose_template("", {model.path(), "/nonexistent"}, "qwen2_5", "model_type qwen2").name, "qwen2_5");
  EXPECT_EQ(choose_template("", {}, "llama3", "model_type llama").source, "model_type llama");
  EXPECT_EQ(read_args_json_template(model.path()), std::nullopt);
}

TEST(TemplateSelect, Errors) {
  try {
    choose_template("vicuna", {}, "qwen3");
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(e.message().find("--template: unknown chat template 'vicuna'"), std::string::npos) << e.message();
    EXPECT_NE(e.hint().find("qwen2_5"), std::string::npos);
  }
  test::TempDir ckpt;
  ckpt.write("args.json", R"({"template": "baichuan"})");
  try {
    choose_template("", {ckpt.path()}, "qwen3");
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(e.message().find("args.json: unknown chat template 'baichuan'"), std::string::npos) << e.message();
  }
  EXPECT_THROW(choose_template("", {}, ""), UsageError);
  test::TempDir bad;
  bad.write("args.json", "{\"template\": ");
  EXPECT_THROW(choose_template("", {bad.path()}, "qwen3"), DataError);
  bad.write("args.json", R"({"template": 3})");
  EXPECT_THROW(read_args_json_template(bad.path()), DataError);
}

}  // namespace
}  // namespace swift::templates
