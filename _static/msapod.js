/* The book's own script (Jupyter Book loads every JS file of _static/): accessibility
   repairs of what the theme and the notebook renderer write, checked by
   .ci/browser_check.py (axe-core in headless Chromium). */
(function () {
  "use strict";

  /* A box that scrolls sideways (a wide table, a long printed line) must be reachable
     with the keyboard: while it overflows it is a focusable, named region (checked again
     whenever the box changes size: fonts, images, a rotated phone). */
  const SCROLL_BOXES =
    ".msapod-table, div.cell_output, div.pst-scrollable-table-container, .bd-article div.table-wrapper";

  function scrollRegion(box) {
    const overflows = box.scrollWidth > box.clientWidth + 1;
    if (overflows && !box.hasAttribute("tabindex")) {
      box.setAttribute("tabindex", "0");
      box.dataset.msapodScroll = "1";
      if (!box.hasAttribute("role")) box.setAttribute("role", "region");
      if (!box.hasAttribute("aria-label")) {
        const caption = box.querySelector("caption, figcaption");
        const what = box.querySelector("table") ? "table" : "output";
        const text = caption ? caption.textContent.trim().split(/\s+/).slice(0, 12).join(" ") : "";
        box.setAttribute("aria-label", text ? `${what}: ${text}` : `scrollable ${what}`);
      }
    } else if (!overflows && box.dataset.msapodScroll) {
      box.removeAttribute("tabindex");
      delete box.dataset.msapodScroll;
    }
  }

  function scrollableRegions() {
    const boxOf = new Map();  // each observed element -> the box it belongs to
    const observer = new ResizeObserver(entries => {
      for (const e of entries) scrollRegion(boxOf.get(e.target));
    });
    for (const box of document.querySelectorAll(SCROLL_BOXES)) {
      scrollRegion(box);
      for (const el of [box, ...box.children]) {  // the box, and its content that grows
        boxOf.set(el, box);
        observer.observe(el);
      }
    }
  }

  /* Controls whose label hides their visible text (WCAG 2.5.3, label in name): the
     notebook renderer's "Show code cell source" toggles are named "Toggle hidden
     content"; the theme's search button shows "Search Ctrl+K" and is named "Search"; the
     colour-mode button's icon glyphs count as its visible text. */
  function labelsInName() {
    for (const el of document.querySelectorAll('summary[aria-label="Toggle hidden content"]')) {
      el.removeAttribute("aria-label");
    }
    for (const el of document.querySelectorAll("button.search-button__button[aria-label]")) {
      const text = el.textContent.trim().replace(/\s+/g, " ");
      if (text) el.setAttribute("aria-label", text);
    }
    /* icon buttons named by their aria-label (the colour-mode button): the icons are
       decoration; Font Awesome's script replaces them with SVGs titled "Light", "Dark"
       and "System Settings", which would count as the button's visible text */
    for (const button of document.querySelectorAll("button.theme-switch-button[aria-label]")) {
      const untitle = () => {
        for (const svg of button.querySelectorAll("svg")) {
          svg.setAttribute("aria-hidden", "true");
          svg.removeAttribute("aria-labelledby");
          svg.removeAttribute("role");
          for (const title of svg.querySelectorAll("title")) title.remove();
        }
      };
      untitle();
      new MutationObserver(untitle).observe(button, {childList: true, subtree: true});
    }
  }

  /* Sphinx's bibliography is a role="list" whose entries carry the deprecated role
     doc-biblioentry, which a list may not hold: they become its list items. */
  function bibliography() {
    for (const el of document.querySelectorAll('[role="list"] > [role="doc-biblioentry"]')) {
      el.setAttribute("role", "listitem");
    }
  }

  /* A figure shown smaller than it was drawn (a narrow column, a phone) opens at full size
     when clicked or tapped: it becomes a link to its image. */
  function zoomableFigures() {
    const link = img => {
      if (img.closest("a") || img.naturalWidth <= img.clientWidth + 1) return;
      const a = document.createElement("a");
      a.href = img.currentSrc || img.src;
      a.className = "msapod-zoom";
      a.title = "Open the figure at full size";
      img.replaceWith(a);
      a.append(img);
    };
    for (const img of document.querySelectorAll("div.cell_output img")) {
      if (img.complete) link(img);
      else img.addEventListener("load", () => link(img), {once: true});
    }
  }

  function run() {
    labelsInName();
    bibliography();
    scrollableRegions();
    zoomableFigures();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", run);
  } else {
    run();
  }
})();
