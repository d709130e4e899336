-- pandoc 2 writes an empty link before every line of highlighted code, for links to single
-- lines that the vignettes never make: about 65 bytes a line, a tenth of the installed
-- HTML. Each code block is written here as pandoc writes it, without those links and ids.
-- pandoc writes its highlighting CSS only for a document with highlighted code of its own:
-- a hidden empty piece of R code at the end keeps it.
if not pandoc.write then return {} end  -- pandoc < 2.17: the code stays as pandoc writes it

local line_link = '<span id="cb%d+%-%d+"><a href="#cb%d+%-%d+" aria%-hidden="true" tabindex="%-1"></a>'
local changed = false

function CodeBlock(block)
  local html, n = pandoc.write(pandoc.Pandoc({block}), "html"):gsub(line_link, "<span>")
  if n == 0 then return nil end
  changed = true
  return pandoc.RawBlock("html", (html:gsub('(<div class="sourceCode") id="cb%d+"', "%1")))
end

function Pandoc(doc)
  if changed then
    doc.blocks:insert(pandoc.Plain({pandoc.Span({pandoc.Code("", pandoc.Attr("", {"r"}))},
                                                pandoc.Attr("", {}, {{"hidden", ""}}))}))
  end
  return doc
end
