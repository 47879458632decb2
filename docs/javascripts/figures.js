// Figures drawn smaller than they are (a wide figure in the text column) open full size in a new tab on a
// click. A notebook's figures are data: URLs, which a tab may not open directly: they open as blobs.
function zoomable(image) {
  if (image.naturalWidth <= image.clientWidth * 1.05 || image.classList.contains("zoomable")) {
    return;
  }
  image.classList.add("zoomable");
  image.title = "click: open full size";
  image.addEventListener("click", async (event) => {
    event.preventDefault();
    const blob = await (await fetch(image.src)).blob();
    window.open(URL.createObjectURL(blob), "_blank");
  });
}

function markFigures() {
  for (const image of document.querySelectorAll("article img")) {
    if (image.complete) {
      zoomable(image);
    } else {
      image.addEventListener("load", () => zoomable(image));
    }
  }
}

window.addEventListener("load", markFigures);
window.addEventListener("resize", markFigures);
