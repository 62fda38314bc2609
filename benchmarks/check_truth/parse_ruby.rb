# Ground truth for benchmarks/check_corpus.py: whether a Ruby source parses, by Ruby's own compiler (what
# `ruby -c` runs: RubyVM::InstructionSequence.compile, nothing executed).
# Protocol (stdin, stdout): a line "LENGTH" (UTF-8 bytes), then the source; the answer is one line: "ok", or
# "error LINE MESSAGE". Usage: ruby parse_ruby.rb
$stdout.sync = true
$stderr.reopen(File::NULL, "w") # warnings are not errors
$VERBOSE = nil
while (header = $stdin.gets)
  source = $stdin.read(header.to_i).force_encoding("UTF-8")
  begin
    RubyVM::InstructionSequence.compile(source)
    puts "ok"
  rescue SyntaxError => e
    line = e.message[/:(\d+):/, 1] || "0"
    puts "error #{line} #{e.message.lines.first.to_s.strip.gsub("\n", " ")}"
  end
end
