package org.acemq.amqp.acceptance;

import java.util.ArrayList;
import java.util.List;

/** Fenced code blocks of a Markdown file. */
final class Markdown {

    /**
     * One fenced block.
     *
     * @param file the file it is in, for messages
     * @param line the 1-based line of its opening fence
     * @param language the info string's first word, lower case ({@code ""} if none)
     * @param text the lines between the fences
     */
    record Block(String file, int line, String language, String text) {
        String where() {
            return file + ":" + line;
        }
    }

    private Markdown() {
    }

    /**
     * @param file the name to report
     * @param markdown the text
     * @return every fenced ({@code ```}) block, in order; a block left open runs to the end
     */
    static List<Block> blocks(String file, String markdown) {
        List<Block> blocks = new ArrayList<>();
        String[] lines = markdown.split("\\R", -1);
        for (int i = 0; i < lines.length; i++) {
            String trimmed = lines[i].strip();
            if (!trimmed.startsWith("```")) {
                continue;
            }
            String indent = lines[i].substring(0, lines[i].indexOf('`'));
            String info = trimmed.substring(3).strip();
            String language = info.isEmpty() ? "" : info.split("\\s+")[0].toLowerCase(java.util.Locale.ROOT);
            int start = i;
            StringBuilder text = new StringBuilder();
            for (i = i + 1; i < lines.length && !lines[i].strip().startsWith("```"); i++) {
                String line = lines[i].startsWith(indent) ? lines[i].substring(indent.length()) : lines[i];
                text.append(line).append('\n');
            }
            blocks.add(new Block(file, start + 1, language, text.toString()));
        }
        return blocks;
    }
}
