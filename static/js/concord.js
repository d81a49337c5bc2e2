// Site-wide behaviour that the Content-Security-Policy keeps out of inline attributes.
document.addEventListener("click", (event) => {
  const target = event.target;
  if (target instanceof HTMLInputElement && target.matches("input.select-on-click")) {
    target.select();
  }
});
