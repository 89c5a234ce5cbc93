package org.acemq.amqp.acceptance;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.StringReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;
import org.xml.sax.InputSource;

/**
 * The README (and the guides whose examples users copy) can never drift from the API: every {@code ```java} block
 * compiles against the published modules, and every {@code ```xml} block names real artifacts, the way
 * {@code MetricsTableTest} keeps the metrics table true. See {@link JavaSnippets} for what a block may be.
 */
class DocsSnippetsTest {

    /** The files whose blocks are checked: the README and the guides written to be copied from. */
    static final List<String> CHECKED = List.of("README.md", "docs/testing.md", "docs/monitoring.md",
            "docs/spring-boot.md");

    @Test
    void everyJavaBlockCompilesAgainstThePublishedModules(@TempDir Path out) {
        List<String> errors = new ArrayList<>();
        int compiled = 0;
        for (String file : CHECKED) {
            for (Markdown.Block block : javaBlocks(file)) {
                JavaSnippets.Result r = JavaSnippets.compile(block, out.resolve("b" + block.line() + file.hashCode()));
                errors.addAll(r.errors());
                compiled++;
                System.out.println((r.compiled() ? "compiles: " : "FAILS:    ") + block.where()
                        + (r.fragment() ? " (fragment)" : ""));
            }
        }
        assertThat(compiled).as("java blocks found in %s", CHECKED).isPositive();
        assertThat(errors).as("java blocks that do not compile").isEmpty();
    }

    @Test
    void theQuickStartIsACompleteProgram(@TempDir Path out) {
        List<Markdown.Block> quickStart = Markdown.blocks("README.md", section("README.md", "Quick start")).stream()
                .filter(b -> b.language().equals("java")).toList();
        assertThat(quickStart).as("java blocks under '## Quick start'").isNotEmpty();
        Markdown.Block first = quickStart.get(0);
        assertThat(JavaSnippets.isFragment(first)).as("the quick start is a fragment").isFalse();
        assertThat(first.text()).contains("import ").contains("public static void main(String[] args)");
    }

    @Test
    void aBlockThatIsNeitherAProgramNorAMarkedFragmentFailsTheCheck(@TempDir Path out) {
        Markdown.Block bare = new Markdown.Block("X.md", 3, "java", "AmqpConsumer.builder().start();\n");
        assertThat(JavaSnippets.compile(bare, out.resolve("bare")).errors()).singleElement().asString()
                .contains("X.md:3").contains("// fragment: given ");

        Markdown.Block undefined = new Markdown.Block("X.md", 7, "java",
                "// fragment: given AmqpConsumer consumer\nconsumer.close();\nshutdownSignal.await();\n");
        assertThat(JavaSnippets.compile(undefined, out.resolve("undefined")).errors()).singleElement().asString()
                .startsWith("X.md:10: error: cannot find symbol");

        Markdown.Block fine = new Markdown.Block("X.md", 12, "java",
                "// fragment: given AmqpConsumer consumer\nSystem.out.println(consumer.health().healthy());\n");
        assertThat(JavaSnippets.compile(fine, out.resolve("fine")).errors()).isEmpty();
    }

    @Test
    void everyXmlBlockNamesPublishedArtifactsInThisVersionAndRealThirdPartyOnes() throws Exception {
        Set<String> published = Project.publishedModules().stream().map(Project.Module::artifactId)
                .collect(Collectors.toCollection(LinkedHashSet::new));
        List<String> problems = new ArrayList<>();
        List<Element> dependencies = new ArrayList<>();
        for (String file : CHECKED) {
            for (Markdown.Block block : Markdown.blocks(file, Project.read(file))) {
                if (block.language().equals("xml")) {
                    dependencies.addAll(dependencies(block, problems));
                }
            }
        }
        assertThat(dependencies).as("dependencies in the README's xml blocks").isNotEmpty();
        boolean bomImported = dependencies.stream().anyMatch(d -> text(d, "artifactId").equals("acemq-bom")
                && text(d, "type").equals("pom") && text(d, "scope").equals("import"));
        for (Element d : dependencies) {
            String group = text(d, "groupId");
            String artifact = text(d, "artifactId");
            String version = text(d, "version");
            if (group.equals("org.acemq.amqp")) {
                if (!published.contains(artifact)) {
                    problems.add(artifact + " is not a published module (published: " + published + ")");
                }
                if (version.isEmpty() ? !bomImported : !version.equals(Project.version())) {
                    problems.add(artifact + ": version '" + version + "' should be " + Project.version()
                            + (bomImported ? " or left to the BOM" : ""));
                }
            } else if (version.isEmpty() && d.hasAttribute(BOOT_MANAGED)) {
                // left to the block's spring-boot-starter-parent, a Boot line the line modules build and test
                continue;
            } else if (!onClassPath(group, artifact, version)) {
                problems.add(group + ":" + artifact + ":" + version + " is not what this build resolves and tests "
                        + "with (the README states the versions it is tested with)");
            }
        }
        assertThat(problems).isEmpty();
        assertThat(dependencies).as("the README shows the BOM import and the runtime")
                .anyMatch(d -> text(d, "artifactId").equals("acemq-consumer-runtime"));
        assertThat(bomImported).as("the README shows the BOM import").isTrue();
    }

    // ------------------------------------------------------------------------------------------------------------

    static List<Markdown.Block> javaBlocks(String file) {
        return Markdown.blocks(file, Project.read(file)).stream().filter(b -> b.language().equals("java")).toList();
    }

    /** @return the lines under {@code ## <title>} up to the next level-2 heading */
    static String section(String file, String title) {
        StringBuilder sb = null;
        for (String line : Project.read(file).split("\\R")) {
            if (line.startsWith("## ")) {
                if (sb != null) {
                    break;
                }
                if (line.substring(3).strip().equalsIgnoreCase(title)) {
                    sb = new StringBuilder();
                }
            } else if (sb != null) {
                sb.append(line).append('\n');
            }
        }
        assertThat(sb).as("%s has a '## %s' section", file, title).isNotNull();
        return sb.toString();
    }

    private static List<Element> dependencies(Markdown.Block block, List<String> problems) {
        List<Element> result = new ArrayList<>();
        try {
            Document doc = DocumentBuilderFactory.newInstance().newDocumentBuilder()
                    .parse(new InputSource(new StringReader("<snippet>" + block.text() + "</snippet>")));
            boolean bootParent = false;
            NodeList parents = doc.getElementsByTagName("parent");
            for (int i = 0; i < parents.getLength(); i++) {
                Element parent = (Element) parents.item(i);
                if (text(parent, "groupId").equals("org.springframework.boot")
                        && text(parent, "artifactId").equals("spring-boot-starter-parent")) {
                    if (testedBootLines().contains(text(parent, "version"))) {
                        bootParent = true;
                    } else {
                        problems.add(block.where() + ": Boot parent " + text(parent, "version")
                                + " is not a line tooling/spring-boot-lines tests (" + testedBootLines() + ")");
                    }
                }
            }
            NodeList list = doc.getElementsByTagName("dependency");
            for (int i = 0; i < list.getLength(); i++) {
                Element d = (Element) list.item(i);
                if (bootParent && text(d, "groupId").startsWith("org.springframework.boot")) {
                    d.setAttribute(BOOT_MANAGED, "true");
                }
                result.add(d);
            }
        } catch (Exception e) {
            problems.add(block.where() + ": not well-formed XML: " + e.getMessage());
        }
        return result;
    }

    private static final String BOOT_MANAGED = "boot-managed";

    /** The Boot versions the line modules use as their parent (tooling/spring-boot-lines/<line>/pom.xml). */
    private static Set<String> testedBootLines() {
        Set<String> versions = new LinkedHashSet<>();
        Matcher m = Pattern.compile("<artifactId>spring-boot-starter-parent</artifactId>\\s*<version>([^<]+)</version>")
                .matcher("");
        for (String line : List.of("boot-3.5", "boot-4.0", "boot-4.1")) {
            if (m.reset(Project.read("tooling/spring-boot-lines/" + line + "/pom.xml")).find()) {
                versions.add(m.group(1).strip());
            }
        }
        return versions;
    }

    private static String text(Element dependency, String child) {
        NodeList nodes = dependency.getElementsByTagName(child);
        return nodes.getLength() == 0 ? "" : nodes.item(0).getTextContent().strip();
    }

    private static boolean onClassPath(String group, String artifact, String version) {
        String path = File.separator + group.replace('.', File.separatorChar) + File.separator + artifact
                + File.separator + version + File.separator;
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            if (entry.contains(path) && Files.exists(Path.of(entry))) {
                return true;
            }
        }
        return false;
    }
}
