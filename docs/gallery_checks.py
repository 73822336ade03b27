"""A check that sphinx-gallery runs on every figure of the worked examples.

sphinx-gallery captures the figures open at the end of a cell and closes them. A figure
whose panels are filled by a later cell is therefore shown with those panels empty, and
the later drawing appears nowhere. :func:`matplotlib_scraper` refuses such a figure, so
the build fails (``abort_on_example_error``) instead of publishing it.
"""

from __future__ import annotations

from sphinx_gallery.scrapers import matplotlib_scraper as _save_figures


def empty_axes(fig) -> list[str]:
    """A description of every visible axes of ``fig`` that holds no data.

    An axes holds data when a line, patch, collection or image was drawn in it
    (:meth:`matplotlib.axes.Axes.has_data`); one switched off with ``ax.axis("off")``
    shows no empty frame and is not counted.
    """
    return [
        f"axes {i + 1} of {len(fig.axes)}"
        + (f' (title "{ax.get_title()}")' if ax.get_title() else " (untitled)")
        for i, ax in enumerate(fig.axes)
        if ax.get_visible() and ax.axison and not ax.has_data()
    ]


def matplotlib_scraper(block, block_vars, gallery_conf, **kwargs):
    """sphinx-gallery's matplotlib scraper, raising if a figure has an axes without data."""
    import matplotlib.pyplot as plt  # here, once sphinx-gallery has chosen the Agg backend

    problems = [
        f"figure {num}: {', '.join(empty)}"
        for num in plt.get_fignums() if (empty := empty_axes(plt.figure(num)))
    ]
    if problems:
        plt.close("all")  # so that the next example does not inherit them
        raise ValueError(
            f"{block_vars['src_file']}, cell at line {block.lineno}: "
            f"{'; '.join(problems)} holds no data at the end of the cell, where the "
            "figure is captured and closed. Draw every panel in the cell that shows the "
            "figure (a later cell cannot add to it), or remove the empty axes.")
    return _save_figures(block, block_vars, gallery_conf, **kwargs)
