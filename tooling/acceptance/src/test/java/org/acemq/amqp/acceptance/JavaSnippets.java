package org.acemq.amqp.acceptance;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

/**
 * Compiles the {@code ```java} blocks of the documentation with {@code javax.tools}, against this JVM's class path (the
 * published modules and what their examples use).
 *
 * <p>A block is either a complete compilation unit (its imports and at least one top-level type, no package) or a
 * deliberate fragment whose first line is the visible marker {@code // fragment: given <declarations>}, for example
 * {@code // fragment: given MeterRegistry registry, AmqpConsumer consumer}. A fragment is compiled too: as the body of
 * a method whose parameters are those declarations, with every package the published modules export imported. Any
 * other block fails the check.
 */
final class JavaSnippets {

    static final String FRAGMENT_MARKER = "// fragment: given ";
    private static final Pattern TOP_LEVEL_TYPE =
            Pattern.compile("(?m)^(?:public\\s+|final\\s+|abstract\\s+|sealed\\s+)*(class|interface|record|enum)\\s+(\\w+)");
    private static final Pattern PUBLIC_TYPE =
            Pattern.compile("(?m)^public\\s+(?:final\\s+|abstract\\s+|sealed\\s+)*(?:class|interface|record|enum)\\s+(\\w+)");
    private static final Pattern EXPORTS = Pattern.compile("(?m)^\\s*exports\\s+([\\w.]+)\\s*;");
    private static final List<String> FRAGMENT_JDK_IMPORTS = List.of("java.time", "java.util", "java.util.concurrent",
            "javax.sql", "io.micrometer.core.instrument");

    /** What became of one block. */
    record Result(Markdown.Block block, boolean fragment, List<String> errors, Path classes) {
        boolean compiled() {
            return errors.isEmpty();
        }
    }

    private JavaSnippets() {
    }

    static boolean isFragment(Markdown.Block block) {
        return block.text().stripLeading().startsWith(FRAGMENT_MARKER);
    }

    static boolean isCompilationUnit(Markdown.Block block) {
        return TOP_LEVEL_TYPE.matcher(block.text()).find();
    }

    /**
     * @param block a {@code ```java} block
     * @param out a new directory for its classes
     * @return the compiler's verdict, with errors located at lines of the Markdown file
     */
    static Result compile(Markdown.Block block, Path out) {
        String source;
        String typeName;
        int headerLines;
        boolean fragment = isFragment(block);
        if (fragment) {
            String text = block.text().stripLeading();
            int eol = text.indexOf('\n');
            String given = text.substring(FRAGMENT_MARKER.length(), eol < 0 ? text.length() : eol).strip();
            String body = eol < 0 ? "" : text.substring(eol + 1);
            typeName = "Fragment" + block.line();
            StringBuilder header = new StringBuilder();
            for (String pkg : fragmentImports()) {
                header.append("import ").append(pkg).append(".*;\n");
            }
            header.append("class ").append(typeName).append(" {\n  void run(").append(given.replace(";", ","))
                    .append(") throws Exception {\n");
            headerLines = (int) header.chars().filter(c -> c == '\n').count() - 1; // the marker line is replaced
            source = header + body + "\n  }\n}\n";
        } else if (isCompilationUnit(block)) {
            Matcher pub = PUBLIC_TYPE.matcher(block.text());
            typeName = pub.find() ? pub.group(1) : "Snippet" + block.line();
            headerLines = 0;
            source = block.text();
        } else {
            return new Result(block, false, List.of(block.where() + ": a ```java block must be a complete compilation "
                    + "unit (imports and a class, no package) or start with '" + FRAGMENT_MARKER
                    + "<declarations>' (a visible marker for a deliberate fragment)"), null);
        }

        JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        try (StandardJavaFileManager files = compiler.getStandardFileManager(diagnostics, Locale.ROOT, null)) {
            Files.createDirectories(out);
            JavaFileObject unit = new SimpleJavaFileObject(URI.create("string:///" + typeName + ".java"),
                    JavaFileObject.Kind.SOURCE) {
                @Override
                public CharSequence getCharContent(boolean ignoreEncodingErrors) {
                    return source;
                }
            };
            List<String> options = List.of("-classpath", System.getProperty("java.class.path"), "-d", out.toString(),
                    "-proc:none", "-Xlint:deprecation,unchecked,removal", "-Werror", "--release", "17");
            compiler.getTask(null, files, diagnostics, options, null, List.of(unit)).call();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<String> errors = new ArrayList<>();
        for (Diagnostic<? extends JavaFileObject> d : diagnostics.getDiagnostics()) {
            if (d.getKind() == Diagnostic.Kind.ERROR || d.getKind() == Diagnostic.Kind.WARNING
                    || d.getKind() == Diagnostic.Kind.MANDATORY_WARNING) {
                long sourceLine = d.getLineNumber();
                long mdLine = sourceLine < 0 ? block.line() : block.line() + Math.max(1, sourceLine - headerLines);
                errors.add(block.file() + ":" + mdLine + ": " + d.getKind().toString().toLowerCase(Locale.ROOT) + ": "
                        + d.getMessage(Locale.ROOT));
            }
        }
        return new Result(block, fragment, errors, out);
    }

    /** @return the packages a fragment sees: every package the published modules export, and a few of the JDK's */
    static List<String> fragmentImports() {
        TreeSet<String> packages = new TreeSet<>(FRAGMENT_JDK_IMPORTS);
        for (Project.Module module : Project.publishedModules()) {
            Path src = module.dir().resolve("src/main/java");
            Path moduleInfo = src.resolve("module-info.java");
            try {
                if (Files.isRegularFile(moduleInfo)) {
                    Matcher m = EXPORTS.matcher(Files.readString(moduleInfo));
                    while (m.find()) {
                        packages.add(m.group(1));
                    }
                } else if (Files.isDirectory(src)) {
                    // no module-info (test-support): every package with a class in it
                    try (Stream<Path> walk = Files.walk(src)) {
                        walk.filter(p -> p.toString().endsWith(".java"))
                                .map(p -> src.relativize(p.getParent()).toString().replace('/', '.'))
                                .filter(p -> !p.contains("internal"))
                                .forEach(packages::add);
                    }
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return new ArrayList<>(packages);
    }
}
