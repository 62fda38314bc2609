// Ground truth for benchmarks/check_corpus.py: whether a Java source parses, by javac's own parser
// (JavacTask.parse: syntax only, no symbols resolved, nothing compiled).
// Protocol (stdin, stdout): a line "LENGTH" (UTF-8 bytes), then the source; the answer is one line: "ok", or
// "error LINE MESSAGE". Usage: java ParseJava.java
import com.sun.source.util.JavacTask;
import java.io.*;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import javax.tools.*;

public class ParseJava {
    public static void main(String[] args) throws Exception {
        JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
        DataInputStream in = new DataInputStream(new BufferedInputStream(System.in, 1 << 20));
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        StringBuilder header = new StringBuilder();
        int c;
        while ((c = in.read()) != -1) {
            if (c != '\n') { header.append((char) c); continue; }
            byte[] bytes = new byte[Integer.parseInt(header.toString().trim())];
            header.setLength(0);
            in.readFully(bytes);
            String source = new String(bytes, StandardCharsets.UTF_8);
            JavaFileObject file = new SimpleJavaFileObject(URI.create("string:///Source.java"), JavaFileObject.Kind.SOURCE) {
                @Override public CharSequence getCharContent(boolean ignore) { return source; }
            };
            DiagnosticCollector<JavaFileObject> found = new DiagnosticCollector<>();
            JavacTask task = (JavacTask) compiler.getTask(null, null, found, List.of("-proc:none"), null, List.of(file));
            task.parse();
            Diagnostic<? extends JavaFileObject> first = found.getDiagnostics().stream()
                .filter(d -> d.getKind() == Diagnostic.Kind.ERROR).findFirst().orElse(null);
            out.println(first == null ? "ok" : "error " + first.getLineNumber() + " " + first.getMessage(null).replace('\n', ' '));
        }
    }
}
