package org.acemq.amqp.consumer;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Which top-level classes of a source tree name which others in their code (comments and literals left out), for
 * {@link ArchitectureTest}. It sees what the compiled classes do not: javac copies a constant's value into the class
 * that reads it, so {@code A.NAME} read in {@code B} leaves no trace of {@code A} in {@code B.class}. A class names
 * another by an import (also of a nested type or a static member), by its simple name in the same package, or by its
 * qualified name; a simple name that the file imports from elsewhere, declares itself, or writes after a dot (a
 * qualified name's last part) does not count.
 */
final class SourceReferences {

    private static final Pattern IMPORT = Pattern.compile("\\bimport\\s+(static\\s+)?([\\w.]+?)(\\.\\*)?\\s*;");
    private static final Pattern DECLARED = Pattern.compile("\\b(?:class|interface|enum|record)\\s+(\\w+)");
    private static final Pattern NAME = Pattern.compile("(?<![\\w.$])([A-Z]\\w*)\\b");

    private SourceReferences() {
    }

    /**
     * @param sources the source root ({@code src/main/java})
     * @param rootPackage the package whose classes (and subpackages' classes) are read and named
     * @return the graph, with classes named relative to {@code rootPackage} ({@code internal.Intake})
     */
    static ClassGraph scan(Path sources, String rootPackage) throws IOException {
        Map<String, Path> files = new TreeMap<>(); // fully qualified name -> file
        try (Stream<Path> all = Files.walk(sources.resolve(rootPackage.replace('.', '/')))) {
            for (Path f : all.filter(p -> p.toString().endsWith(".java")).toList()) {
                String name = sources.relativize(f).toString().replace('/', '.').replaceAll("\\.java$", "");
                if (!name.endsWith("package-info") && !name.endsWith("module-info")) {
                    files.put(name, f);
                }
            }
        }
        ClassGraph graph = new ClassGraph();
        for (Map.Entry<String, Path> file : files.entrySet()) {
            String self = file.getKey();
            String from = self.substring(rootPackage.length() + 1);
            graph.add(from, from, "");
            String code = codeOnly(Files.readString(file.getValue()));
            String pkg = self.substring(0, self.lastIndexOf('.'));
            Set<String> hidden = new HashSet<>(); // simple names that mean something else in this file
            Matcher d = DECLARED.matcher(code);
            while (d.find()) {
                hidden.add(d.group(1));
            }
            Matcher i = IMPORT.matcher(code);
            while (i.find()) {
                String imported = i.group(2);
                String target = owner(imported, files.keySet());
                if (target != null) {
                    graph.add(from, target.substring(rootPackage.length() + 1), "imports " + imported);
                } else if (i.group(3) == null && i.group(1) == null) {
                    hidden.add(imported.substring(imported.lastIndexOf('.') + 1));
                }
            }
            String body = IMPORT.matcher(code).replaceAll("").replaceFirst("\\bpackage\\s+[\\w.]+\\s*;", "");
            Set<String> simpleNames = names(body);
            for (String other : files.keySet()) {
                String simple = other.substring(other.lastIndexOf('.') + 1);
                String to = other.substring(rootPackage.length() + 1);
                if (body.contains(other)) {
                    graph.add(from, to, "names " + other);
                } else if (other.startsWith(pkg + ".") && other.indexOf('.', pkg.length() + 1) < 0
                        && !hidden.contains(simple) && simpleNames.contains(simple)) {
                    graph.add(from, to, "names " + simple);
                }
            }
        }
        return graph;
    }

    /** @return the class of {@code files} that {@code imported} is or is nested in (or a member of), or null */
    private static String owner(String imported, Set<String> files) {
        for (String name = imported; name.contains("."); name = name.substring(0, name.lastIndexOf('.'))) {
            if (files.contains(name)) {
                return name;
            }
        }
        return null;
    }

    /** @return the capitalised names in {@code body} that are not the last part of a qualified name */
    private static Set<String> names(String body) {
        Set<String> names = new HashSet<>();
        Matcher m = NAME.matcher(body);
        while (m.find()) {
            names.add(m.group(1));
        }
        return names;
    }

    /** @return the source with comments, string and character literals and text blocks blanked out */
    static String codeOnly(String source) {
        StringBuilder b = new StringBuilder(source.length());
        int n = source.length();
        int i = 0;
        while (i < n) {
            char c = source.charAt(i);
            if (source.startsWith("//", i)) {
                i = skipTo(source, i, "\n");
            } else if (source.startsWith("/*", i)) {
                i = skipTo(source, i + 2, "*/");
            } else if (source.startsWith("\"\"\"", i)) {
                i = skipTo(source, i + 3, "\"\"\"");
                b.append("\"\"");
            } else if (c == '"' || c == '\'') {
                int j = i + 1;
                while (j < n && source.charAt(j) != c) {
                    j += source.charAt(j) == '\\' ? 2 : 1;
                }
                i = j + 1;
                b.append(c).append(c);
            } else {
                b.append(c);
                i++;
            }
        }
        return b.toString();
    }

    /** @return the index just after the next {@code end} from {@code from} (the end of the text if none) */
    private static int skipTo(String source, int from, String end) {
        int at = source.indexOf(end, from);
        return at < 0 ? source.length() : at + end.length();
    }

}
