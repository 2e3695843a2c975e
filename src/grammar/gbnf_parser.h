// GBNF: llama.cpp's grammar notation, as its users write it.
//
//   root   ::= object                  # a rule; the grammar starts at `root`
//   object ::= "{" ws ( pair ( "," ws pair )* )? "}"
//   pair   ::= [a-z]+ ":" ws [^"\n]{1,8} | "x"? .
//
// Rule names are letters, digits, '-' and '_'. Elements: "literal" and [class] (with ^ negation, ranges a-z and the
// escapes \n \r \t \\ \" \[ \] \- \^ \xHH \uHHHH \UHHHHHHHH), '.' (any character), a rule name, ( group ), each
// optionally followed by *, +, ?, {m}, {m,} or {m,n}. '#' starts a comment. A newline ends a rule unless it
// follows '::=' or '|' or is inside parentheses.
//
// The text is untrusted (a request field): errors name the line and column; size, nesting and repetition counts
// are bounded so that a hostile grammar fails quickly with bounded memory.
#pragma once

#include <memory>
#include <string_view>

#include "grammar/grammar.h"
#include "util/result.h"

namespace pagoda::grammar {

inline constexpr size_t kMaxGbnfBytes = size_t{1} << 20;
inline constexpr int kMaxGbnfNesting = 256;
inline constexpr uint32_t kMaxRepetition = 10'000;

Result<std::shared_ptr<const Grammar>> parse_gbnf(std::string_view text, std::string_view root = "root",
                                                  GrammarLimits limits = {});

}  // namespace pagoda::grammar
