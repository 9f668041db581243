// The source page: bring the cited span into view (it may sit below the page image).
document.addEventListener("DOMContentLoaded", () => {
  const cited = document.querySelector("#passage mark");
  if (cited && !location.hash) cited.scrollIntoView({ block: "center" });
});
